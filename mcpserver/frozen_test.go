package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// When the server's connections to the database stop answering without
// being closed (a failover behind a proxy, a cut path), an agent is not
// left waiting on its tool call: the call fails after the database call
// timeout, saying so, of kind unavailable, pointing at pgbus_health, and
// pgbus_health answers UNREACHABLE; the calls after it connect afresh and
// work, writes included, in the same session.
func TestToolsGiveUpOnFrozenConnections(t *testing.T) {
	// Not parallel: the calls that must succeed get the database call
	// timeout of 1s too, which the package's other tests beside it on a
	// busy machine can make a call outlast. A database of its own: the
	// health check reads every queue's depth, and the shared database's
	// hundreds took it past the 1s on a loaded machine.
	url := pgtest.NewDatabase(t)
	direct := pgtest.OpenStore(t, url)
	queue := newQueue(t, direct)
	ids := deadLetter(t, direct, queue, `{"n":1}`)
	proxy := pgtest.NewFreezingProxy(t, url)
	through := pgtest.OpenStore(t, pgtest.WithParam(t, proxy.URL(), "pool_max_conns", "4"))
	base := serveHTTP(t, deps(t, through, ops.Options{DatabaseCallTimeout: time.Second}), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	if res := callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": queue}); res.IsError {
		t.Fatalf("pgbus_dlq_list before the freeze: %s", resultText(res))
	}
	pgtest.FillPool(t, through.Pool(), 4)

	proxy.Freeze()
	res := callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": queue})
	text := resultText(res)
	if !res.IsError || !strings.Contains(text, "the database did not answer within 1s (database call timeout)") || !strings.Contains(text, "see pgbus_health") {
		t.Errorf("pgbus_dlq_list through frozen connections: error %v, %q; want a tool error saying the database did not answer within the database call timeout, pointing at pgbus_health", res.IsError, text)
	}
	if kind := errorKind(t, res); kind != ops.KindUnavailable {
		t.Errorf("pgbus_dlq_list through frozen connections: kind %q, want %q", kind, ops.KindUnavailable)
	}
	var h ops.Health
	structured(t, callTool(t, c, "pgbus_health", map[string]any{}), &h)
	if h.Status == ops.HealthUnreachable || h.DeadMessages == nil || *h.DeadMessages < 1 {
		t.Errorf("pgbus_health after the call given up: %+v, want a verdict on the queues through new connections", h)
	}

	// Frozen again, on the connections made since: pgbus_health says so.
	proxy.Freeze()
	structured(t, callTool(t, c, "pgbus_health", map[string]any{}), &h)
	if h.Status != ops.HealthUnreachable || len(h.Reasons) != 1 || !strings.Contains(h.Reasons[0].Message, "did not answer within 1s (database call timeout)") {
		t.Errorf("pgbus_health through frozen connections: %+v, want UNREACHABLE saying the database did not answer within the database call timeout", h)
	}
	var retried ops.DLQRetry
	structured(t, callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": ids}), &retried)
	if retried.Retried != 1 || inDLQ(t, direct, queue, ids[0]) || pgtest.Live(t, direct, queue) != 1 {
		t.Errorf("pgbus_dlq_retry after the freeze: %+v; want the message retried through new connections", retried)
	}
}

// errorKind is the kind a tool error names in its _meta.
func errorKind(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.Meta == nil {
		t.Fatal("the tool error has no _meta")
	}
	raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
	var m struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("_meta pgbus/error %s: %v", raw, err)
	}
	return m.Kind
}
