package mcpserver_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/store"
)

// progressOf returns the progress values of the notifications for token,
// in the order received, and the total of the last.
func progressOf(got *notes, token string) (values []float64, total string) {
	for _, p := range got.of("notifications/progress") {
		if p["progressToken"] == token {
			v, _ := strconv.ParseFloat(fmt.Sprint(p["progress"]), 64)
			values = append(values, v)
			total = fmt.Sprint(p["total"])
		}
	}
	return values, total
}

// callWithProgress calls a tool with a progress token and fails the test
// unless it succeeds.
func callWithProgress(t *testing.T, c *client.Client, token, name string, args map[string]any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	res, err := c.CallTool(testContext(t), req)
	if err != nil || res.IsError {
		t.Fatalf("%s with a progress token: %v %s", name, err, resultText(res))
	}
}

// wantProgress checks that the notifications for token were received, rise
// and end at want of want.
func wantProgress(t *testing.T, got *notes, token string, want int) {
	t.Helper()
	values, total := progressOf(got, token)
	if len(values) == 0 || values[len(values)-1] != float64(want) || total != strconv.Itoa(want) {
		t.Fatalf("progress for %s: %v of %s; want rising to %d of %d", token, values, total, want, want)
	}
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			t.Fatalf("progress for %s does not rise: %v", token, values)
		}
	}
}

// A bulk retry by filter and a purge send progress notifications to a
// client that passed a progress token, over Streamable HTTP (in the answer
// to the call, before the result) and SSE (on the session's stream).
func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	for _, transport := range []string{mcpserver.TransportHTTP, mcpserver.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			queue := newQueue(t, st)
			pgtest.DeadLetterN(t, st, queue, 4, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError", Message: "http 503"})
			discard := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`, `{"n":3}`)
			if _, err := st.DiscardDead(testContext(t), queue, discard); err != nil {
				t.Fatal(err)
			}
			c := serveForNotifications(t, deps(t, st), transport)
			got := collect(c)

			callWithProgress(t, c, "retry", "pgbus_dlq_retry", map[string]any{"queue": queue, "error_class": "HTTPError", "limit": 10})
			callWithProgress(t, c, "purge", "pgbus_dlq_purge", map[string]any{"queue": store.DLQName(queue), "older_than": "0s", "confirm": true})
			pgtest.Eventually(t, time.Minute, "the progress notifications", func() bool {
				r, _ := progressOf(got, "retry")
				p, _ := progressOf(got, "purge")
				return len(r) > 0 && len(p) > 0 && r[len(r)-1] == 4 && p[len(p)-1] == 3
			})
			wantProgress(t, got, "retry", 4)
			wantProgress(t, got, "purge", 3)
		})
	}
}
