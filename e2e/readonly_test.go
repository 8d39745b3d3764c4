package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The queues of a read-only world: orders has dead messages, held is
// paused.
const (
	roOrders  = "orders"
	roHeld    = "held"
	roBreaker = "http:billing.internal:443"
)

// roWorld is a database holding something for every write tool to change.
type roWorld struct {
	url  string
	st   *store.Store
	dead []int64 // in orders_dlq: the first to retry, the second to discard
}

// newROWorld makes a database of its own with two dead messages of orders
// and a discarded one in its DLQ's archive (for purge), the paused queue
// held (for resume) and the open breaker roBreaker (for reset).
func newROWorld(t *testing.T) roWorld {
	t.Helper()
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	ctx := pgtest.Context(t)
	pgtest.CreateQueue(t, st, roOrders)
	pgtest.CreateQueue(t, st, roHeld)
	if _, err := st.SetPaused(ctx, roHeld, true); err != nil {
		t.Fatal(err)
	}
	ids := pgtest.DeadLetterN(t, st, roOrders, 3, pgtest.DeadSpec{Kind: "charge", Class: "CardDeclined", Message: "card declined"})
	if n, err := st.DiscardDead(ctx, store.DLQName(roOrders), ids[2:]); err != nil || n != 1 {
		t.Fatalf("discard %d: %d discarded, %v", ids[2], n, err)
	}
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: roBreaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if state, err := st.BreakerFailure(ctx, roBreaker, "503 Service Unavailable"); err != nil || state != store.BreakerOpen {
		t.Fatalf("breaker %s after a failure: %q, %v; want it open", roBreaker, state, err)
	}
	return roWorld{url: url, st: st, dead: ids[:2]}
}

// state describes everything a write tool would change.
func (w roWorld) state(t *testing.T) string {
	t.Helper()
	ctx := pgtest.Context(t)
	var in []int64
	for _, id := range w.dead {
		if pgtest.Int(t, w.st, `SELECT count(*) FROM pgmq."q_orders_dlq" WHERE msg_id = $1`, id) == 1 {
			in = append(in, id)
		}
	}
	paused := map[string]bool{}
	for _, q := range []string{roOrders, roHeld} {
		s, err := w.st.QueueSettingsOf(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		paused[q] = s.Paused
	}
	breakers, err := w.st.ListBreakers(ctx, "")
	if err != nil || len(breakers) != 1 {
		t.Fatalf("breakers: %+v, %v", breakers, err)
	}
	return fmt.Sprintf("orders_dlq holds %v and archives %d; orders holds %d; paused %v; breaker %s; %d audit entries",
		in, pgtest.Archived(t, w.st, store.DLQName(roOrders)), pgtest.Live(t, w.st, roOrders), paused,
		breakers[0].State, pgtest.Int(t, w.st, `SELECT count(*) FROM pgbus.audit_log`))
}

// roWriteCalls are calls of every write tool that would change the world
// of newROWorld on a server that writes.
func roWriteCalls(w roWorld) map[string]map[string]any {
	return map[string]map[string]any{
		"pgbus_dlq_retry":     {"queue": roOrders, "ids": []int64{w.dead[0]}},
		"pgbus_dlq_discard":   {"queue": roOrders, "ids": []int64{w.dead[1]}},
		"pgbus_dlq_purge":     {"queue": roOrders, "older_than": "0s", "confirm": true},
		"pgbus_queue_pause":   {"queue": roOrders},
		"pgbus_queue_resume":  {"queue": roHeld},
		"pgbus_queue_run_now": {"queue": roOrders},
		"pgbus_circuit_reset": {"name": roBreaker},
		"pgbus_circuit_open":  {"name": roBreaker, "for": "30m"},
	}
}

// pgbus serve --read-only, the built binary, over each transport with
// mcp-go's client: tools/list lists only read tools, every write tool
// called by name answers a tool error naming the command an operator can
// run, and the database is as it was.
func TestServeReadOnlyEveryTransport(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"stdio", "sse", "http"} {
		t.Run(tr, func(t *testing.T) {
			w := newROWorld(t)
			before := w.state(t)
			if want := fmt.Sprintf("orders_dlq holds %v and archives 1; orders holds 0; paused map[held:true orders:false]; breaker open; 0 audit entries", w.dead); before != want {
				t.Fatalf("the world before serving: %s\nwant: %s", before, want)
			}
			c, logs := serveMCP(t, tr, "--read-only", "--database-url", w.url)
			assertOnlyReadTools(t, c)
			calls := roWriteCalls(w)
			for _, name := range slices.Sorted(maps.Keys(calls)) {
				res, err := c.CallTool(pgtest.Context(t), callRequest(name, calls[name]))
				switch {
				case err != nil:
					t.Errorf("%s on a read-only server: protocol error %v; want a tool error", name, err)
				case !res.IsError:
					t.Errorf("a read-only server ran %s: %+v", name, res.Content)
				case !strings.Contains(resultText(res), "read-only") || !strings.Contains(resultText(res), "an operator can run: pgbus "):
					t.Errorf("%s on a read-only server: %q; want it to say the server is read-only and name a pgbus command", name, resultText(res))
				}
			}
			if after := w.state(t); after != before {
				t.Fatalf("a read-only server changed the database:\nbefore: %s\nafter:  %s\nlogs: %s", before, after, logs())
			}
			// The server reads this very database.
			if got := listedDead(t, c); !slices.Equal(got, []int64{w.dead[1], w.dead[0]}) {
				t.Fatalf("pgbus_dlq_list on the read-only server lists %v; want %v, newest first", got, []int64{w.dead[1], w.dead[0]})
			}
		})
	}
}

// assertOnlyReadTools fails unless c lists the read tools, each annotated
// read-only, and none of the write tools.
func assertOnlyReadTools(t *testing.T, c *client.Client) {
	t.Helper()
	res, err := c.ListTools(pgtest.Context(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	listed := map[string]bool{}
	for _, tool := range res.Tools {
		listed[tool.Name] = true
		if ro := tool.Annotations.ReadOnlyHint; ro == nil || !*ro {
			t.Errorf("a read-only server lists %s, which is not annotated read-only", tool.Name)
		}
	}
	for _, name := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard", "pgbus_dlq_restore", "pgbus_dlq_purge", "pgbus_queue_pause", "pgbus_queue_resume", "pgbus_queue_run_now", "pgbus_circuit_reset", "pgbus_circuit_open"} {
		if listed[name] {
			t.Errorf("a read-only server lists the write tool %s", name)
		}
	}
	for _, name := range []string{"pgbus_health", "pgbus_dlq_summary", "pgbus_dlq_list", "pgbus_dlq_show", "pgbus_queue_stats"} {
		if !listed[name] {
			t.Errorf("a read-only server does not list the read tool %s (it lists %v)", name, listed)
		}
	}
}

// listedDead returns the ids pgbus_dlq_list lists for orders.
func listedDead(t *testing.T, c *client.Client) []int64 {
	t.Helper()
	res, err := c.CallTool(pgtest.Context(t), callRequest("pgbus_dlq_list", map[string]any{"queue": roOrders}))
	if err != nil || res.IsError {
		t.Fatalf("pgbus_dlq_list: %+v, %v", res, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Items []struct {
			MsgID int64 `json:"msg_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("pgbus_dlq_list structured content %s: %v", b, err)
	}
	ids := make([]int64, len(page.Items))
	for i, it := range page.Items {
		ids[i] = it.MsgID
	}
	return ids
}

// resultText is the text of a tool's result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func callRequest(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return req
}

// serveMCP starts the built binary's serve command with args over
// transport tr (stdio, sse or http; the HTTP ones on a free loopback port)
// and returns an initialized mcp-go client, and a function returning the
// server's logs so far. The server runs with nothing from this process's
// environment but PATH, and ends with the test.
func serveMCP(t *testing.T, tr string, args ...string) (*client.Client, func() string) {
	t.Helper()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	logs := func() string {
		b, _ := os.ReadFile(logFile.Name())
		return string(b)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "TMPDIR=" + os.TempDir(), "PGBUS_LOG_FORMAT=json"}
	var c *client.Client
	if tr == "stdio" {
		c, err = client.NewStdioMCPClientWithOptions(binary, nil, append([]string{"serve"}, args...),
			transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
				cmd := exec.CommandContext(ctx, command, args...)
				cmd.Env, cmd.Stderr = env, logFile
				return cmd, nil
			}))
	} else {
		c, err = httpClient(t, tr, startHTTPServe(t, env, logFile, append([]string{"serve", "--transport", tr, "--addr", "127.0.0.1:0"}, args...)))
	}
	if err != nil {
		t.Fatalf("start pgbus serve over %s: %v\nlogs: %s", tr, err, logs())
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-read-only", Version: "1"}
	if _, err := c.Initialize(pgtest.Context(t), req); err != nil {
		t.Fatalf("initialize over %s: %v\nlogs: %s", tr, err, logs())
	}
	return c, logs
}

// httpClient starts an mcp-go client of transport tr against url.
func httpClient(t *testing.T, tr, url string) (*client.Client, error) {
	t.Helper()
	var c *client.Client
	var err error
	if tr == "sse" {
		c, err = client.NewSSEMCPClient(url)
	} else {
		c, err = client.NewStreamableHttpClient(url)
	}
	if err != nil {
		return nil, err
	}
	return c, c.Start(pgtest.Context(t))
}

// startHTTPServe runs the binary with args, its stderr in logFile, until
// the test ends, when it gets SIGTERM; it returns the URL the server logs
// once it listens.
func startHTTPServe(t *testing.T, env []string, logFile *os.File, args []string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stderr = env, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("pgbus %s did not stop within 30s of SIGTERM", strings.Join(args, " "))
		}
	})
	deadline := time.After(time.Minute)
	for {
		if url := listeningURL(logFile.Name()); url != "" {
			return url
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logFile.Name())
			t.Fatalf("pgbus %s exited before listening: %v\n%s", strings.Join(args, " "), err, b)
		case <-deadline:
			b, _ := os.ReadFile(logFile.Name())
			t.Fatalf("pgbus %s logged no listening URL within a minute:\n%s", strings.Join(args, " "), b)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listeningURL returns the url of the server's "listening" line in the
// JSON log at path, or "" while there is none.
func listeningURL(path string) string {
	b, _ := os.ReadFile(path)
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Msg string `json:"msg"`
			URL string `json:"url"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "pgbus MCP server listening" {
			return rec.URL
		}
	}
	return ""
}
