package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/resources"
	"github.com/pgbus/pgbus/tools"
)

// The queue stats stop being read once the last subscription is ended by
// unsubscribing, as when its session ends, where a session that had
// unsubscribed from everything kept them read every interval for as long
// as it lasted. The reader ends at once, not at its next interval (an
// hour here): a server shut down leaves no goroutine behind.
func TestResourceWatchStopsAfterUnsubscribe(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	w, c := watchedOverStdio(t, time.Hour)
	ctx := pgtest.Context(t)
	// A subscription to a queue that does not exist is refused.
	stats := "pgbus://queues/" + pgtest.NewQueue(t, pgtest.Store(t), "mq") + "/stats"
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION // resources/subscribe
	init.Params.ClientInfo = mcp.Implementation{Name: "pgbus-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{resources.URIQueues, stats} {
		sub := mcp.SubscribeRequest{}
		sub.Params.URI = uri
		if err := c.Subscribe(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, 30*time.Second, "the stats to be read for the subscriptions", w.isRunning)
	for _, uri := range []string{resources.URIQueues, stats} {
		unsub := mcp.UnsubscribeRequest{}
		unsub.Params.URI = uri
		if err := c.Unsubscribe(ctx, unsub); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, 30*time.Second, "the stats to stop being read", func() bool { return !w.isRunning() })
}

// A client of protocol version 2026-07-28 subscribes for as long as its
// subscriptions/listen stream is open: the queue stats are read while it
// is, and no longer once the client closes it, at once.
func TestResourceWatchStopsWhenListenCloses(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	w, c := watchedOverStdio(t, time.Hour)
	ctx := pgtest.Context(t)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "pgbus-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{resources.URIQueues, "pgbus://queues/orders/stats"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	pgtest.Eventually(t, 30*time.Second, "the stats to be read for the listen stream's subscriptions", w.isRunning)
	stop()
	pgtest.Eventually(t, 30*time.Second, "the stats to stop being read once the stream closed", func() bool { return !w.isRunning() })
}

// watchedOverStdio serves, over stdio, a server with only the resources
// and a watch of their updates every interval; it returns the watch and
// mcp-go's client, started, not initialized. Both end with the test.
func watchedOverStdio(t *testing.T, every time.Duration) (*resourceWatch, *client.Client) {
	t.Helper()
	svc, err := ops.New(pgtest.Store(t), ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := &server.Hooks{}
	s := server.NewMCPServer(Name, "test", server.WithHooks(hooks), server.WithResourceCapabilities(true, false))
	w := newResourceWatch(svc, every, slog.New(slog.DiscardHandler))
	w.attach(s, hooks)
	resources.Register(s, tools.Deps{Ops: svc})

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, s, inR, outW, nil) }()
	c := client.NewClient(transport.NewIO(outR, inW, nil))
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-done
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return w, c
}

// isRunning reports whether w reads the stats every interval.
func (w *resourceWatch) isRunning() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}
