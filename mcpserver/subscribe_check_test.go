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
			{"pgbus://x", mcp.ErrResourceNotFound, "pgbus://queues/{queue}/stats"},
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

// A read and a subscription answer a pgbus: URI by one rule, over every
// transport: one of pgbus's forms whose parts cannot be a queue's name or
// a message's id, or a URI that does not parse, is malformed, invalid
// params (-32602); a URI that parses but is of no form of pgbus's names a
// resource there is not, resource not found (-32002). A subscription to a
// dead message, a resource of pgbus's that is read but never updated, is
// refused as invalid params, saying so.
func TestReadAndSubscribeAnswerURIsAlike(t *testing.T) {
	t.Parallel()
	for tr, c := range legacyClients(t) {
		ctx := testContext(t)
		for _, tc := range []struct {
			uri  string
			want error
		}{
			{"pgbus://x", mcp.ErrResourceNotFound},
			{"pgbus:/queues", mcp.ErrResourceNotFound},
			{"pgbus://queues/orders/stats/", mcp.ErrResourceNotFound},
			{"pgbus://dlq/orders/42/extra", mcp.ErrResourceNotFound},
			{"pgbus://queues/Bad-Name/stats", mcp.ErrInvalidParams},
			{"pgbus://que ues", mcp.ErrInvalidParams},
			{"pgbus://queues/%zz/stats", mcp.ErrInvalidParams},
			{"pgbus://dlq/Bad-Name/42", mcp.ErrInvalidParams},
		} {
			read := mcp.ReadResourceRequest{}
			read.Params.URI = tc.uri
			_, readErr := c.ReadResource(ctx, read)
			sub := mcp.SubscribeRequest{}
			sub.Params.URI = tc.uri
			subErr := c.Subscribe(ctx, sub)
			if !errors.Is(readErr, tc.want) || !errors.Is(subErr, tc.want) {
				t.Errorf("%s: %s: read = %v, subscribe = %v; want %v to both", tr, tc.uri, readErr, subErr, tc.want)
			}
		}
		sub := mcp.SubscribeRequest{}
		sub.Params.URI = "pgbus://dlq/orders/42"
		if err := c.Subscribe(ctx, sub); !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "is read, not subscribed to") {
			t.Errorf("%s: subscribe to a dead message = %v; want invalid params saying it is read, not subscribed to", tr, err)
		}
	}
}
