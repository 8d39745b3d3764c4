package mcpserver_test

import (
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// A resource that does not exist is answered "resource not found" (-32002)
// to a client of protocol 2025-11-25 and invalid params (-32602) to one of
// 2026-07-28, as each revision specifies; a URI naming nothing valid is
// invalid params to both, and a msg_id not written as ids are an invalid
// request (refused before the read); none is an internal error, which
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
		{"legacy, bad id", legacy, badID, mcp.ErrInvalidRequest},
		{"modern, bad id", modern, badID, mcp.ErrInvalidRequest},
	} {
		if err := read(c.client, c.uri); !errors.Is(err, c.want) {
			t.Errorf("%s: read %s = %v; want %v", c.name, c.uri, err, c.want)
		}
	}
}
