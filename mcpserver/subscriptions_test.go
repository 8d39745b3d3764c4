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

// updatedURIs returns the URIs of the resource updates received so far.
func updatedURIs(got *notes) map[string]bool {
	out := map[string]bool{}
	for _, p := range got.of(mcp.MethodNotificationResourceUpdated) {
		if uri, ok := p["uri"].(string); ok {
			out[uri] = true
		}
	}
	return out
}

func subscribe(t *testing.T, c *client.Client, uri string) {
	t.Helper()
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	if err := c.Subscribe(testContext(t), req); err != nil {
		t.Fatalf("subscribe to %s: %v", uri, err)
	}
}

// A client subscribed to pgbus://queues and to one queue's stats is told
// when a message is dead-lettered there, over SSE and over Streamable HTTP
// (on the stream the client listens on); another queue's stats, subscribed
// to and then unsubscribed from, send nothing.
func TestResourceSubscriptions(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the watcher reads every queue
	for _, tr := range []string{mcpserver.TransportHTTP, mcpserver.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			queue, other := newQueue(t, st), newQueue(t, st)
			s := newServer(t, deps(t, st), mcpserver.Options{ResourcePoll: 20 * time.Millisecond})
			base := serveServer(t, s, tr)
			var c *client.Client
			if tr == mcpserver.TransportSSE {
				c = newSSEClient(t, base)
			} else {
				var err error
				if c, err = client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithContinuousListening()); err != nil {
					t.Fatal(err)
				}
				if _, err := startSession(testContext(t), c, "pgbus-test"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
			}
			got := collect(c)
			init, err := c.ListResources(testContext(t), mcp.ListResourcesRequest{})
			if err != nil || len(init.Resources) == 0 {
				t.Fatalf("list resources: %v %v", init, err)
			}

			stats := "pgbus://queues/" + queue + "/stats"
			otherStats := "pgbus://queues/" + other + "/stats"
			subscribe(t, c, "pgbus://queues")
			subscribe(t, c, stats)
			subscribe(t, c, otherStats)
			unsub := mcp.UnsubscribeRequest{}
			unsub.Params.URI = otherStats
			if err := c.Unsubscribe(testContext(t), unsub); err != nil {
				t.Fatalf("unsubscribe: %v", err)
			}

			// The other queue changes first: an update of it would come no
			// later than the one of the queue watched.
			deadLetter(t, st, other, `{"n":1}`)
			deadLetter(t, st, queue, `{"n":1}`)
			pgtest.Eventually(t, time.Minute, "updates of pgbus://queues and "+stats, func() bool {
				u := updatedURIs(got)
				return u["pgbus://queues"] && u[stats]
			})
			if u := updatedURIs(got); u[otherStats] {
				t.Fatalf("updates %v include %s, unsubscribed from", u, otherStats)
			}
		})
	}
}
