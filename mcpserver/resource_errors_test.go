package mcpserver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// A resource that does not exist is answered "resource not found" (-32002)
// to a client of protocol 2025-11-25 and invalid params (-32602) to one of
// 2026-07-28, as each revision specifies; a URI naming nothing valid is
// invalid params to both, as is a msg_id not written as ids (refused
// before the read); none is an internal error, which
// tells a client the server failed.
func TestResourceErrorCodes(t *testing.T) {
	t.Parallel()
	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	base := serveServer(t, s, mcpserver.TransportHTTP)
	legacy, _ := newSessionClient(t, base)
	modern := modernClient(t, s, mcpserver.TransportHTTP, "modern")
	read := func(c *client.Client, uri string) error {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		_, err := c.ReadResource(testContext(t), req)
		return err
	}
	const missing, bad, badID = "pgbus://queues/no_such_queue_zz/stats", "pgbus://queues/Bad-Name/stats", "pgbus://dlq/orders/+42"
	for _, c := range []struct {
		name   string
		client *client.Client
		uri    string
		want   error
	}{
		{"legacy, missing", legacy, missing, mcp.ErrResourceNotFound},
		{"modern, missing", modern, missing, mcp.ErrInvalidParams},
		{"legacy, bad", legacy, bad, mcp.ErrInvalidParams},
		{"modern, bad", modern, bad, mcp.ErrInvalidParams},
		{"legacy, bad id", legacy, badID, mcp.ErrInvalidParams},
		{"modern, bad id", modern, badID, mcp.ErrInvalidParams},
	} {
		if err := read(c.client, c.uri); !errors.Is(err, c.want) {
			t.Errorf("%s: read %s = %v; want %v", c.name, c.uri, err, c.want)
		}
	}
	// A pgbus: URI of no form of pgbus's is answered as missing, in
	// words that name the forms there are.
	for _, uri := range []string{"pgbus://dlq/orders/42/extra", "pgbus:/queues", "pgbus://queue", "pgbus://queues/orders/stats/"} {
		for _, c := range []struct {
			name   string
			client *client.Client
			want   error
		}{{"legacy", legacy, mcp.ErrResourceNotFound}, {"modern", modern, mcp.ErrInvalidParams}} {
			err := read(c.client, uri)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "is not one of pgbus's: read pgbus://queues, pgbus://queues/{queue}/stats or pgbus://dlq/{queue}/{msg_id}") {
				t.Errorf("%s: read %s = %v; want %v naming pgbus's resources", c.name, uri, err, c.want)
			}
		}
	}
}

// A URI too long is refused before the server quotes it back whole, and
// one missing says which URIs there are. A subscription to a resource that
// can be read is taken (TestSubscribeFailsAsReadFails: one that cannot is
// not).
func TestResourceURIChecks(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	queue := newQueue(t, st)
	// Of protocol 2025-11-25: a client of 2026-07-28 subscribes in its
	// subscriptions/listen request, not with resources/subscribe.
	c, _ := newSessionClient(t, serveServer(t, newServer(t, deps(t, st), mcpserver.Options{}), mcpserver.TransportHTTP))
	ctx := testContext(t)
	read := func(uri string) error {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		_, err := c.ReadResource(ctx, req)
		return err
	}
	subscribe := func(uri string) error {
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		return c.Subscribe(ctx, req)
	}
	long := "pgbus://queues/" + strings.Repeat("a", 1_000_000) + "/stats"
	for _, c := range []struct {
		what string
		err  error
		says string
	}{
		{"read of a long URI", read(long), "is 1000021 bytes; pgbus's are at most 1024"},
		{"read of an unknown long URI", read("pgbus://" + strings.Repeat("z", 100_000)), "bytes; pgbus's are at most 1024"},
		{"read of a long dead message id", read("pgbus://dlq/orders/" + strings.Repeat("9", 100_000)), "bytes; pgbus's are at most 1024"},
		{"read without a URI", read(""), "uri is required: read pgbus://queues"},
		{"subscription to a long URI", subscribe(long), "bytes; pgbus's are at most 1024"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.says) || len(c.err.Error()) > 2000 {
			t.Errorf("%s: %.300v (%d bytes); want an error saying %q, at most 2,000 bytes", c.what, c.err, len(fmt.Sprint(c.err)), c.says)
		}
	}
	if err := subscribe("pgbus://queues/" + queue + "/stats"); err != nil {
		t.Fatalf("subscription to a queue's stats: %v", err)
	}
}
