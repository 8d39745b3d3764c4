package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
)

// get GETs url with headers and returns the status and body.
func get(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// readyz returns the status code and verdict of /readyz.
func readyz(t *testing.T, base string) (int, metrics.Readiness) {
	t.Helper()
	code, body := get(t, base+metrics.PathReadyz, nil)
	var r metrics.Readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	return code, r
}

// /readyz on --metrics-addr answers 503 with the reason while a queue
// with a worker makes no progress (its one slot held by a job that does
// not end, the backlog aging past the stall window), and 200 once the job
// ends and the backlog drains. /livez answers 200 throughout.
func TestReadyzFlipsWithStall(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{StallAfter: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mon := runner.NewMonitor(svc, nil)
	q := pgtest.NewFastQueue(t, st, "stall", nil)
	release := make(chan struct{})
	client := pgtest.NewClient(t, st, q, func(c *engine.Config) {
		c.Queues[0].Concurrency = 1
		c.Observers = mon.Observers()
	})
	client.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	pgtest.Start(t, client)
	for range 3 {
		pgtest.Send(t, client, q, map[string]int{"n": 1}, engine.SendOptions{})
	}
	base := serveMonitor(t, mon)
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
	var stalled metrics.Readiness
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503", func() bool {
		code, r := readyz(t, base)
		stalled = r
		return code == http.StatusServiceUnavailable
	})
	if stalled.Status != ops.HealthStalled || len(stalled.Reasons) == 0 || stalled.Reasons[0].Code != "backlog_not_draining" || stalled.Reasons[0].Queue != q {
		t.Fatalf("stalled verdict %+v, want backlog_not_draining on %s", stalled, q)
	}
	close(release)
	pgtest.Eventually(t, time.Minute, "/readyz to answer 200", func() bool {
		code, r := readyz(t, base)
		return code == http.StatusOK && r.Status != ops.HealthStalled
	})
	if n := pgtest.Live(t, st, q); n != 0 {
		t.Fatalf("ready with %d messages left", n)
	}
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
}

// serveMonitor serves the monitor's endpoints as --metrics-addr does, on
// a loopback port, and returns the base URL.
func serveMonitor(t *testing.T, mon *runner.Monitor) string {
	t.Helper()
	stop, addr, err := mon.Serve(pgtest.Context(t), "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return "http://" + addr.String()
}

// pgbus serve --transport http serves /metrics behind the bearer token,
// and /livez and /readyz without it; the metrics count the MCP tool calls
// by tool and result.
func TestServeHTTPMetricsAndProbes(t *testing.T) {
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const token = "0123456789abcdef0123456789abcdef"
	addrs := make(chan net.Addr, 1)
	cfg := runner.MCPConfig{Transport: mcpserver.TransportHTTP, Logger: slog.New(slog.DiscardHandler), Monitor: runner.NewMonitor(svc, nil),
		HTTP: mcpserver.HTTPConfig{Addr: "127.0.0.1:0", AuthToken: token, Ready: func(a net.Addr) { addrs <- a }}}
	done := make(chan error, 1)
	go func() { done <- runner.ServeMCP(ctx, st, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMCP: %v", err)
		}
	})
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case <-time.After(time.Minute):
		t.Fatal("the server did not listen within a minute")
	}
	auth := map[string]string{"Authorization": "Bearer " + token}

	c, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithHTTPHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}
	call("pgbus_health", nil)
	call("pgbus_health", nil)
	if res := call("pgbus_dlq_show", map[string]any{"queue": "no_such_queue", "msg_id": 1}); !res.IsError {
		t.Fatal("pgbus_dlq_show of a missing queue did not answer a tool error")
	}

	if code, _ := get(t, base+metrics.PathMetrics, nil); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	if code, _ := get(t, base+metrics.PathMetrics, map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("/metrics from a foreign origin: %d, want 403", code)
	}
	if code, _ := get(t, base+metrics.PathLivez, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("/livez from a foreign origin: %d, want 403", code)
	}
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Errorf("/livez without the token: %d %s, want 200", code, body)
	}
	if code, r := readyz(t, base); code != http.StatusOK || r.Status != ops.HealthOK {
		t.Errorf("/readyz of an empty database without the token: %d %+v, want 200 OK", code, r)
	}
	code, body := get(t, base+metrics.PathMetrics, auth)
	if code != http.StatusOK {
		t.Fatalf("/metrics with the token: %d %s", code, body)
	}
	for _, want := range []string{
		`pgbus_mcp_tool_calls_total{result="ok",tool="pgbus_health"} 2`,
		`pgbus_mcp_tool_calls_total{result="error",tool="pgbus_dlq_show"} 1`,
		"pgbus_database_up 1",
		"pgbus_workers_running 0",
		"# TYPE go_goroutines gauge",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
