package mcpserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// A tool call whose client goes away ends with it: a retry of a whole DLQ
// held by a lock on its queue is stopped once the client's event stream
// closes (the legacy SSE transport) or the connection of its POST does
// (Streamable HTTP), instead of running on for no one, and what it did
// (here nothing: its move was rolled back) is recorded in the audit log.
func TestToolCallEndsWhenItsClientLeaves(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{mcpserver.TransportSSE, mcpserver.TransportHTTP} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			s := testStore(t)
			q := newQueue(t, s)
			ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`, `{"n":3}`)
			calls := &callCounter{}
			// The server has a store of its own, as another process would:
			// the call it holds waiting keeps one of its connections.
			base := serveHTTPWith(t, deps(t, pgtest.OpenStore(t, pgtest.URL(t)), ops.Options{DatabaseCallTimeout: 5 * time.Minute}), mcpserver.Options{ToolCalled: calls.add}, mcpserver.HTTPConfig{Transport: tr})
			lock := pgtest.HoldLock(t, s, "q_"+q)

			leave := callAndLeave(t, tr, base, q)
			lock.AwaitWaiting(1)
			leave()
			pgtest.Eventually(t, time.Minute, "the call to end once its client left", func() bool {
				n := 0
				for _, result := range []string{"ok", "error", "failed", "unavailable", "asked", "cancelled"} {
					n += calls.count("pgbus_dlq_retry", result)
				}
				return n == 1 && len(lock.Waiting()) == 0
			})
			// Counted as cancelled: an error the caller can fix it is not.
			if n := calls.count("pgbus_dlq_retry", "cancelled"); n != 1 {
				t.Errorf("the call its client left was counted cancelled %d times; want once", n)
			}
			lock.Release()
			for _, id := range ids {
				if !inDLQ(t, s, q, id) {
					t.Errorf("message %d left the DLQ though the retry was stopped before it moved", id)
				}
			}
			if n := pgtest.Live(t, s, q); n != 0 {
				t.Errorf("%d messages on the queue after the stopped retry; want none", n)
			}
			if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE tool = 'dlq_retry' AND is_error AND arguments->'filter'->>'queue' = $1`, q); n != 1 {
				t.Errorf("%d audit entries of the stopped retry; want one, an error", n)
			}
		})
	}
}

// callAndLeave calls pgbus_dlq_retry on every dead message of queue over
// transport tr at base, and returns how its client leaves: over SSE it
// closes, which closes its event stream; over Streamable HTTP the POST's
// connection is dropped, with no DELETE of the session and no
// cancellation sent.
func callAndLeave(t *testing.T, tr, base, queue string) (leave func()) {
	t.Helper()
	if tr == mcpserver.TransportSSE {
		c, err := client.NewSSEMCPClient(base + mcpserver.PathSSE)
		if err != nil {
			t.Fatal(err)
		}
		connect(t, c)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "pgbus_dlq_retry"
			req.Params.Arguments = map[string]any{"queue": queue, "limit": 10}
			_, _ = c.CallTool(testContext(t), req) // ends with the client
		}()
		return func() { _ = c.Close() }
	}
	session := rawSession(t, base)
	ctx, cancel := context.WithCancel(testContext(t))
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pgbus_dlq_retry","arguments":{"queue":"` + queue + `","limit":10}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	return cancel
}
