package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// transportStdio names, beside mcpserver's HTTP transports, the stdio one
// in the tests of modern clients.
const transportStdio = mcpserver.TransportStdio

// serveStdio serves s over ServeStdio on pipes and returns mcp-go's
// transport on the other ends; the server stops when the test ends.
func serveStdio(t *testing.T, s *server.MCPServer) transport.Interface {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserver.ServeStdio(ctx, s, inR, outW, nil) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		if err := <-done; err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	})
	return transport.NewIO(outR, inW, nil)
}

// modernClient serves s over tr (stdio or Streamable HTTP) and returns
// mcp-go's client of it, started on protocol version 2026-07-28 as client
// name, version 1: no initialize, no session, the client's name,
// capabilities and log level in each request's _meta. opts are the
// client's options; it is closed when the test ends.
func modernClient(t *testing.T, s *server.MCPServer, tr, name string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	var c *client.Client
	switch tr {
	case transportStdio:
		c = client.NewClient(serveStdio(t, s), opts...)
	case mcpserver.TransportHTTP:
		tp, err := transport.NewStreamableHTTP(serveServer(t, s, tr) + mcpserver.PathMCP)
		if err != nil {
			t.Fatal(err)
		}
		c = client.NewClient(tp, opts...)
	default:
		t.Fatalf("no modern client over %s", tr)
	}
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("connect on %s: %v", mcp.ProtocolVersion20260728, err)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the client settled on protocol version %q, want %s", v, mcp.ProtocolVersion20260728)
	}
	return c
}

// modernTransports are the transports a client of protocol version
// 2026-07-28 connects over (SSE predates it).
var modernTransports = []string{transportStdio, mcpserver.TransportHTTP}

// A client of protocol version 2026-07-28 that names pgbus://queues and a
// queue's stats among the resource subscriptions of subscriptions/listen
// is told on that stream when a message is dead-lettered there, over
// stdio and Streamable HTTP; another queue's stats, not named, send
// nothing.
func TestModernResourceSubscriptions(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the watcher reads every queue
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			queue, other := newQueue(t, st), newQueue(t, st)
			s := mcpserver.New(deps(t, st), mcpserver.Options{ResourcePoll: 20 * time.Millisecond})
			c := modernClient(t, s, tr, "modern-agent")
			got := collect(c)
			stats := "pgbus://queues/" + queue + "/stats"
			otherStats := "pgbus://queues/" + other + "/stats"
			listening := listen(t, c, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"pgbus://queues", stats}})

			deadLetter(t, st, other, `{"n":1}`)
			deadLetter(t, st, queue, `{"n":1}`)
			pgtest.Eventually(t, time.Minute, "updates of pgbus://queues and "+stats, func() bool {
				u := updatedURIs(got)
				return u["pgbus://queues"] && u[stats]
			})
			if u := updatedURIs(got); u[otherStats] {
				t.Fatalf("updates %v include %s, not subscribed to", u, otherStats)
			}
			listening()
		})
	}
}

// listen opens a subscriptions/listen stream of c for filter, once the
// server acknowledged it; the returned function closes it, as does the end
// of the test.
func listen(t *testing.T, c *client.Client, filter mcp.SubscriptionFilter) (stop func()) {
	t.Helper()
	acked := make(chan struct{})
	var once sync.Once
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			once.Do(func() { close(acked) })
		}
	})
	stop, err := c.ListenAsync(testContext(t), filter, func(err error) { t.Errorf("subscriptions/listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	select {
	case <-acked:
	case <-testContext(t).Done():
		t.Fatal("subscriptions/listen was not acknowledged")
	}
	return stop
}

// A client of protocol version 2026-07-28 sets its log level in each
// request's _meta, over stdio and Streamable HTTP: a write call that
// carries info receives the call's log record (its counts, at info) in
// its answer, and nothing below info; a subscriptions/listen stream that
// carries debug receives the records logged beside the server, such as
// those of its workers, redacted as the log is.
func TestModernLogNotifications(t *testing.T) {
	st := testStore(t)
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			queue := newQueue(t, st)
			ids := deadLetter(t, st, queue, `{"n":1}`)
			cl := mcpserver.NewClientLog()
			c := modernClient(t, mcpserver.New(deps(t, st), mcpserver.Options{ClientLog: cl}), tr, "modern-agent")
			got := collect(c)

			setLevel(t, c, mcp.LoggingLevelInfo)
			callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[0]}})
			pgtest.Eventually(t, time.Minute, "the retry's log notification", func() bool {
				return len(got.logsSaying("pgbus_dlq_retry done")) > 0
			})
			logs := got.logsSaying("pgbus_dlq_retry done")
			data, _ := logs[0]["data"].(map[string]any)
			if len(logs) != 1 || logs[0]["level"] != "info" || logs[0]["logger"] != "pgbus" || data["tool"] != "pgbus_dlq_retry" || fmt.Sprint(data["retried"]) != "1" {
				t.Fatalf("retry log notifications: %v", logs)
			}
			for _, p := range got.of("notifications/message") {
				if p["level"] == "debug" {
					t.Errorf("a debug record reached a client at info: %v", p)
				}
			}

			setLevel(t, c, mcp.LoggingLevelDebug)
			listen(t, c, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"pgbus://queues"}})
			cl.Tee(nil).WithGroup("job").Debug("pgbus: job failed", "queue", "orders", "err", fmt.Errorf("POST https://user:hunter2@example.com: 500"))
			pgtest.Eventually(t, time.Minute, "the worker's log notification on the listen stream", func() bool {
				return len(got.logsSaying("job failed")) > 0
			})
			p := got.logsSaying("job failed")[0]
			job, _ := p["data"].(map[string]any)["job"].(map[string]any)
			if p["level"] != "debug" || job["queue"] != "orders" || strings.Contains(fmt.Sprint(p), "hunter2") {
				t.Fatalf("forwarded worker record: %v", p)
			}
		})
	}
}
