//go:build linux || darwin

package mcpserver_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// While the database is stopped, an agent's session over Streamable HTTP
// stays up: pgbus_health answers the verdict UNREACHABLE instead of
// failing, and the other tools answer tool errors that say the database
// does not answer and point at pgbus_health. Once the database is back,
// the same session works, without restarting the server.
func TestToolsWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	const queue = "outage"
	pgtest.CreateQueue(t, st, queue)
	ids := deadLetter(t, st, queue, `{"n":1}`)
	var mu sync.Mutex
	results := map[string][]string{}
	called := func(tool, result string) {
		mu.Lock()
		defer mu.Unlock()
		results[tool] = append(results[tool], result)
	}
	base := serveHTTPWith(t, deps(t, st), mcpserver.Options{ToolCalled: called}, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)

	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var h ops.Health
	structured(t, callTool(t, c, "pgbus_health", map[string]any{}), &h)
	if h.Status != ops.HealthUnreachable || len(h.Reasons) != 1 || h.Reasons[0].Code != "database_unreachable" ||
		len(h.Reasons[0].Next) != 1 || h.Reasons[0].Next[0].Op != "pgbus_health" {
		t.Errorf("pgbus_health while the database is stopped: %+v, want UNREACHABLE, database_unreachable, next pgbus_health", h)
	}
	for name, args := range map[string]map[string]any{
		"pgbus_dlq_list":  {"queue": queue},
		"pgbus_dlq_retry": {"queue": queue, "ids": ids},
	} {
		res := callTool(t, c, name, args)
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, "the database does not answer") || !strings.Contains(text, "see pgbus_health") {
			t.Errorf("%s while the database is stopped: error %v, %q; want a tool error saying the database does not answer, pointing at pgbus_health", name, res.IsError, text)
		}
	}

	// Counted as the database's outage, not as errors a caller can fix.
	mu.Lock()
	for _, tool := range []string{"pgbus_dlq_list", "pgbus_dlq_retry"} {
		if got := results[tool]; len(got) != 1 || got[0] != "unavailable" {
			t.Errorf("%s while the database is stopped was counted %v, want [unavailable]", tool, got)
		}
	}
	mu.Unlock()
	pgtest.StartCluster(t, dir)
	structured(t, callTool(t, c, "pgbus_health", map[string]any{}), &h)
	if h.Status == ops.HealthUnreachable || h.DeadMessages == nil || *h.DeadMessages != 1 {
		t.Errorf("pgbus_health once the database is back: %+v, want a verdict on the queues, 1 dead message", h)
	}
	var retried ops.DLQRetry
	structured(t, callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": ids}), &retried)
	if inDLQ(t, st, queue, ids[0]) || pgtest.Live(t, st, queue) != 1 {
		t.Errorf("pgbus_dlq_retry once the database is back: %+v; the message is still dead or not in its queue", retried)
	}
}
