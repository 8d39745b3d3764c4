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
// as it lasted.
func TestResourceWatchStopsAfterUnsubscribe(t *testing.T) {
	svc, err := ops.New(pgtest.Store(t), ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks := &server.Hooks{}
	s := server.NewMCPServer(Name, "test", server.WithHooks(hooks), server.WithResourceCapabilities(true, false))
	w := newResourceWatch(svc, 10*time.Millisecond, slog.New(slog.DiscardHandler))
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
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION // resources/subscribe
	init.Params.ClientInfo = mcp.Implementation{Name: "pgbus-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	running := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.running
	}
	for _, uri := range []string{resources.URIQueues, "pgbus://queues/orders/stats"} {
		sub := mcp.SubscribeRequest{}
		sub.Params.URI = uri
		if err := c.Subscribe(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, 30*time.Second, "the stats to be read for the subscriptions", running)
	for _, uri := range []string{resources.URIQueues, "pgbus://queues/orders/stats"} {
		unsub := mcp.UnsubscribeRequest{}
		unsub.Params.URI = uri
		if err := c.Unsubscribe(ctx, unsub); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, 30*time.Second, "the stats to stop being read", func() bool { return !running() })
}
