//go:build linux || darwin

package mcpserver_test

import (
	"context"
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

// A pgbus_dlq_retry by filter cut off by the database stopping answers,
// over Streamable HTTP, a tool error whose _meta pgbus/error names its
// next steps as data, as its text does: pgbus_health, which says when the
// database answers, then the same call again, which retries the rest.
func TestRetryCutByTheDatabaseStoppingNamesItsNextSteps(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, cluster, st := pgtest.PrivateStore(t)
	const queue, n = "cut", 2000
	pgtest.CreateQueue(t, st, queue)
	pgtest.DeadLetterN(t, st, queue, n, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	base := serveHTTP(t, deps(t, st), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "pgbus_dlq_retry"
		req.Params.Arguments = map[string]any{"queue": queue, "limit": 1000}
		res, err := c.CallTool(ctx, req)
		answered <- answer{res, err}
	}()
	pgtest.Eventually(t, time.Minute, "the first messages retried", func() bool {
		select {
		case a := <-answered:
			t.Fatalf("pgbus_dlq_retry answered before it was held: %v %s", a.err, resultText(a.res))
		default:
		}
		return pgtest.Live(t, st, queue) > 0
	})
	// Hold the retry partway: a share lock on the queue's table blocks its
	// next move into it, so that the database stops mid-call.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_cut IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pgmq.q_cut`).Scan(&held); err != nil || held >= n {
		t.Fatalf("the queue holds %d of %d messages when the retry is held (%v); want it held partway", held, n, err)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(context.Background())

	var a answer
	select {
	case a = <-answered:
	case <-time.After(2 * time.Minute):
		t.Fatal("pgbus_dlq_retry has not answered two minutes after the database stopped")
	}
	if a.err != nil {
		t.Fatalf("pgbus_dlq_retry: protocol error %v, want a tool error", a.err)
	}
	text := resultText(a.res)
	if !a.res.IsError || a.res.Meta == nil {
		t.Fatalf("pgbus_dlq_retry cut off: error %v, _meta %+v: %s; want a tool error with _meta", a.res.IsError, a.res.Meta, text)
	}
	raw, err := json.Marshal(a.res.Meta.AdditionalFields["pgbus/error"])
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kind string `json:"kind"`
		Next []struct {
			Tool      string         `json:"tool"`
			Arguments map[string]any `json:"arguments"`
			Why       string         `json:"why"`
		} `json:"next"`
		PartlyDone *struct {
			Done int `json:"done"`
		} `json:"partly_done"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("pgbus/error %s: %v", raw, err)
	}
	if m.Kind != ops.KindUnavailable || m.PartlyDone == nil || m.PartlyDone.Done == 0 || len(m.Next) != 2 {
		t.Fatalf("pgbus/error %s; want kind unavailable, partly_done and two next steps", raw)
	}
	if h := m.Next[0]; h.Tool != "pgbus_health" || len(h.Arguments) != 0 || h.Why == "" {
		t.Errorf("first next step %+v, want pgbus_health with no arguments, saying why", h)
	}
	again := m.Next[1]
	until, _ := again.Arguments["until"].(string)
	if _, err := time.Parse(time.RFC3339Nano, until); err != nil || again.Tool != "pgbus_dlq_retry" || len(again.Arguments) != 3 || again.Arguments["queue"] != queue || again.Arguments["limit"] != float64(1000-m.PartlyDone.Done) ||
		!strings.Contains(again.Why, "retries the rest") {
		t.Errorf("second next step %+v, want the same call again with the limit left, up to where its selection ended, pgbus_dlq_retry {queue: %s, limit: %d, until: ...}, which retries the rest", again, queue, 1000-m.PartlyDone.Done)
	}
	if !strings.Contains(text, "see pgbus_health or pgbus_dlq_retry {") {
		t.Errorf("the text does not name the next steps its _meta gives: %s", text)
	}
}
