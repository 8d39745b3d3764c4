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

// A subscription to a URI whose read fails fails as the read does, over
// every transport: no update can ever come for it, and the client is told
// so, with what to subscribe to instead. Unsubscribing from it fails the
// same way; a subscription to a queue that exists is taken.
func TestSubscribeFailsAsReadFails(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	queue := newQueue(t, s)
	for tr, c := range legacyClients(t) {
		ctx := testContext(t)
		for _, tc := range []struct {
			uri  string
			want error
			says string
		}{
			{"pgbus://queues/no_such_queue_zz/stats", mcp.ErrResourceNotFound, "pgbus://queues"},
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
			unsub := mcp.UnsubscribeRequest{}
			unsub.Params.URI = tc.uri
			if err := c.Unsubscribe(ctx, unsub); !errors.Is(err, tc.want) {
				t.Errorf("%s: unsubscribe %s = %v; want %v", tr, tc.uri, err, tc.want)
			}
		}
		sub := mcp.SubscribeRequest{}
		sub.Params.URI = "pgbus://queues/" + queue + "/stats"
		if err := c.Subscribe(ctx, sub); err != nil {
			t.Errorf("%s: subscribe to %s: %v", tr, sub.Params.URI, err)
		}
	}
}
