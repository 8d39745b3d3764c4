package mcpserver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// legacyClients are clients of protocol 2025-11-25, the last one with
// resources/subscribe, of one server over stdio, Streamable HTTP and SSE.
func legacyClients(t *testing.T) map[string]*client.Client {
	t.Helper()
	d := deps(t, testStore(t))
	stdio := client.NewClient(serveStdio(t, newServer(t, d, mcpserver.Options{})))
	t.Cleanup(func() { _ = stdio.Close() })
	if err := startLegacy(testContext(t), stdio, "pgbus-test"); err != nil {
		t.Fatal(err)
	}
	httpClient, _ := newSessionClient(t, serveServer(t, newServer(t, d, mcpserver.Options{}), mcpserver.TransportHTTP))
	return map[string]*client.Client{
		transportStdio:          stdio,
		mcpserver.TransportHTTP: httpClient,
		mcpserver.TransportSSE:  newSSEClient(t, serveServer(t, newServer(t, d, mcpserver.Options{}), mcpserver.TransportSSE)),
	}
}

// A subscription to a URI that names no resource pgbus updates is
// refused, over every transport: no update could ever come for it, and
// the client is told so, with what to subscribe to instead. One to the
// stats of a queue by a valid name is taken, whether or not the queue is
// there yet (the database is not asked: a slow one would hold the stdio
// transport's next messages). An unsubscription is always taken, so that
// the subscription of a queue dropped since can be ended.
func TestSubscribeRefusesWhatNamesNoResource(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	queue := newQueue(t, s)
	clients := legacyClients(t)
	for tr, c := range clients {
		ctx := testContext(t)
		for _, tc := range []struct {
			uri  string
			want error
			says string
		}{
			{"pgbus://queues/Bad-Name/stats", mcp.ErrInvalidParams, "pgbus://queues"},
			{"pgbus://x", mcp.ErrInvalidParams, "pgbus://queues/{queue}/stats"},
			{"https://x/", mcp.ErrResourceNotFound, "pgbus://queues/{queue}/stats"},
		} {
			sub := mcp.SubscribeRequest{}
			sub.Params.URI = tc.uri
			err := c.Subscribe(ctx, sub)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: subscribe %s = %v; want %v saying %q", tr, tc.uri, err, tc.want, tc.says)
			}
		}
		for _, uri := range []string{"pgbus://queues", "pgbus://queues/" + queue + "/stats", "pgbus://queues/not_made_yet_zz/stats"} {
			sub := mcp.SubscribeRequest{}
			sub.Params.URI = uri
			if err := c.Subscribe(ctx, sub); err != nil {
				t.Errorf("%s: subscribe to %s: %v", tr, uri, err)
			}
		}
	}
	// The queue goes; its subscriptions can still be ended.
	if err := s.DropQueue(testContext(t), queue); err != nil {
		t.Fatal(err)
	}
	for tr, c := range clients {
		for _, uri := range []string{"pgbus://queues/" + queue + "/stats", "pgbus://x", "https://x/"} {
			unsub := mcp.UnsubscribeRequest{}
			unsub.Params.URI = uri
			if err := c.Unsubscribe(testContext(t), unsub); err != nil {
				t.Errorf("%s: unsubscribe %s = %v; want it taken", tr, uri, err)
			}
		}
	}
}
