package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus serve started while its database is down (an agent's MCP client
// starts it over stdio whenever it likes) answers initialize at once and
// lists its tools; pgbus_health says the database is UNREACHABLE and what
// to do, other tools answer kind unavailable with pgbus_health as the next
// step. Once the database is started, the server connects and migrates it
// by itself, and the same calls succeed on the migrated schema; its
// embedded workers start then, make the queue the configuration file
// declares, and work it.
func TestServeStartedWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	dir, cluster := pgtest.PrivateCluster(t)
	url := cluster.URL()
	if err := cluster.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The workers' queue is declared, so made once the schema is.
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  orders:\n    handler: {type: demo}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, stderr := serveStdio(t, "--database-url", url, "--config", cfg)

	tools, err := c.ListTools(pgtest.Context(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list while the database is down: %v\nstderr: %s", err, stderr.String())
	}
	if !slices.ContainsFunc(tools.Tools, func(tool mcp.Tool) bool { return tool.Name == "pgbus_health" }) {
		t.Fatalf("tools/list while the database is down lists no pgbus_health: %+v", tools.Tools)
	}

	status, reasons := healthOf(t, c)
	if status != "UNREACHABLE" || len(reasons) != 1 || reasons[0].Code != "database_unreachable" ||
		!strings.Contains(reasons[0].Message, "does not answer yet") || !strings.Contains(reasons[0].Message, "check that the server is running") {
		t.Fatalf("pgbus_health while the database is down: %s %+v; want UNREACHABLE, database_unreachable, saying it does not answer yet and what to check", status, reasons)
	}

	res := callToolRaw(t, c, "pgbus_queue_stats", map[string]any{"queue": "orders"})
	if kind := errorMetaKind(t, res); kind != "unavailable" || !strings.Contains(toolText(res), "does not answer yet") || !strings.Contains(toolText(res), "pgbus_health") {
		t.Fatalf("pgbus_queue_stats while the database is down: kind %q, %q; want kind unavailable, saying the database does not answer yet and naming pgbus_health", kind, toolText(res))
	}

	// A write refused meanwhile is held for the audit log, as one refused
	// during an outage after start.
	res = callToolRaw(t, c, "pgbus_queue_pause", map[string]any{"queue": "orders"})
	if kind := errorMetaKind(t, res); kind != "unavailable" || !strings.Contains(toolText(res), "does not answer yet") {
		t.Fatalf("pgbus_queue_pause while the database is down: kind %q, %q; want kind unavailable", kind, toolText(res))
	}

	started := pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, 2*time.Minute, "pgbus_health to answer once the database is up", func() bool {
		status, _ := healthOf(t, c)
		return status != "UNREACHABLE"
	})
	var audit ops.AuditPage
	pgtest.Eventually(t, time.Minute, "the refused pause to be written to the audit log", func() bool {
		res := callToolRaw(t, c, "pgbus_audit", map[string]any{"tool": "queue_pause"})
		if res.IsError {
			return false
		}
		raw, _ := json.Marshal(res.StructuredContent)
		return json.Unmarshal(raw, &audit) == nil && len(audit.Items) > 0
	})
	if e := audit.Items[0]; len(audit.Items) != 1 || !e.IsError || !strings.Contains(string(e.Result), "does not answer yet") || !strings.Contains(string(e.Arguments), "orders") || e.Transport != "stdio" {
		t.Fatalf("audit of the pause refused while the database was down: %+v", audit.Items)
	}
	st, err := store.Open(pgtest.Context(t), started.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.CheckSchema(pgtest.Context(t)); err != nil {
		t.Fatalf("the server answers, but the schema is not current: %v\nstderr: %s", err, stderr.String())
	}
	res = callToolRaw(t, c, "pgbus_queue_stats", map[string]any{"queue": "orders"})
	if res.IsError {
		t.Fatalf("pgbus_queue_stats once the database is up: %s\nstderr: %s", toolText(res), stderr.String())
	}
	// The embedded workers run now: a message sent is done.
	pgtest.Send(t, pgtest.NewClient(t, st, "orders", nil), "orders", map[string]any{"order": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the embedded worker to work the message sent", func() bool {
		return pgtest.Live(t, st, "orders") == 0
	})
}

// Over HTTP, pgbus serve started while its database is down listens at
// once: /livez answers 200, /readyz 503 until the database answers, and
// 200 once it does.
func TestServeHTTPStartedWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	dir, cluster := pgtest.PrivateCluster(t)
	url := cluster.URL()
	if err := cluster.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := startServeHTTP(t, "--no-workers", "--database-url", url)
	probe := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := probe("/livez"); code != http.StatusOK {
		t.Fatalf("/livez while the database is down: %d, want 200", code)
	}
	if code := probe("/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while the database is down: %d, want 503", code)
	}
	pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, 2*time.Minute, "/readyz to answer 200 once the database is up", func() bool {
		return probe("/readyz") == http.StatusOK
	})
}

// startServeHTTP runs pgbus serve --transport http with args on a free
// loopback port until the test ends, and returns its base URL.
func startServeHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--transport", "http", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	endpoint, _ := startListening(t, cmd, "pgbus MCP server listening", "url")
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return strings.TrimSuffix(endpoint, "/mcp")
}

// healthReason is a reason of pgbus_health's result.
type healthReason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// healthOf calls pgbus_health, which must not fail, and returns its
// verdict and reasons.
func healthOf(t *testing.T, c *client.Client) (string, []healthReason) {
	t.Helper()
	res := callToolRaw(t, c, "pgbus_health", nil)
	if res.IsError {
		t.Fatalf("pgbus_health: %s", toolText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Status  string         `json:"status"`
		Reasons []healthReason `json:"reasons"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("pgbus_health %s: %v", b, err)
	}
	return h.Status, h.Reasons
}

// errorMetaKind is the kind a tool error carries in its _meta, "" for none.
func errorMetaKind(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError || res.Meta == nil {
		return ""
	}
	b, err := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Kind
}
