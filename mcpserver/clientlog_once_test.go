package mcpserver_test

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// One event, one record: a client that set a level receives the record of
// one write call once, over stdio, Streamable HTTP with its GET stream
// open and SSE on protocol 2025-11-25, and over stdio on 2026-07-28 with a
// listen stream open beside the call, both carrying a level: the call
// receives it in its answer, and the listen stream of the same connection
// not again. (Over Streamable HTTP on 2026-07-28 each request is a session
// of its own: the server cannot tell a client's listen stream from
// another client's, and sends the record on it too.)
func TestClientLogRecordOnce(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	st := testStore(t)
	type setup struct {
		name    string
		connect func(t *testing.T, cl *mcpserver.ClientLog) *client.Client
		modern  bool
	}
	for _, tc := range []setup{
		{"stdio legacy", func(t *testing.T, cl *mcpserver.ClientLog) *client.Client {
			c := client.NewClient(serveStdio(t, newServer(t, deps(t, st), mcpserver.Options{ClientLog: cl})))
			t.Cleanup(func() { _ = c.Close() })
			if err := startLegacy(testContext(t), c, "once"); err != nil {
				t.Fatal(err)
			}
			return c
		}, false},
		{"http legacy listening", func(t *testing.T, cl *mcpserver.ClientLog) *client.Client {
			base := serveServer(t, newServer(t, deps(t, st), mcpserver.Options{ClientLog: cl}), mcpserver.TransportHTTP)
			c, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithContinuousListening())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			if err := startLegacy(testContext(t), c, "once"); err != nil {
				t.Fatal(err)
			}
			return c
		}, false},
		{"sse legacy", func(t *testing.T, cl *mcpserver.ClientLog) *client.Client {
			return newSSEClient(t, serveServer(t, newServer(t, deps(t, st), mcpserver.Options{ClientLog: cl}), mcpserver.TransportSSE))
		}, false},
		{"stdio modern listening", func(t *testing.T, cl *mcpserver.ClientLog) *client.Client {
			return modernClient(t, newServer(t, deps(t, st), mcpserver.Options{ClientLog: cl}), transportStdio, "once")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue := newQueue(t, st)
			ids := deadLetter(t, st, queue, `{"n":1}`)
			cl := mcpserver.NewClientLog()
			c := tc.connect(t, cl)
			got := collect(c)
			setLevel(t, c, mcp.LoggingLevelInfo)
			if tc.modern {
				listen(t, c, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"pgbus://queues"}})
			}
			callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[0]}})
			cl.Tee(nil).Info("pgbus: marker")
			pgtest.Eventually(t, time.Minute, "the marker", func() bool { return len(got.logsSaying("pgbus: marker")) > 0 })
			if n := len(got.logsSaying("pgbus_dlq_retry done")); n != 1 {
				t.Errorf("%d records of one retry: %v", n, got.logsSaying("pgbus_dlq_retry done"))
			}
			if n := len(got.logsSaying("pgbus: marker")); n != 1 {
				t.Errorf("%d records of one marker", n)
			}
		})
	}
}
