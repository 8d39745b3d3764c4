package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// silentPerson is a user who is asked and never answers: asked is closed
// once the question reached them.
type silentPerson struct {
	asked   chan struct{}
	release <-chan struct{}
}

func (p *silentPerson) Elicit(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	close(p.asked)
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return nil, context.Canceled
}

// A call waiting for the user's answer ends when its session is ended by
// DELETE: it answers a tool error saying the session ended and nothing was
// done, and the server is done with it, instead of waiting forever.
func TestSessionEndedByDeleteEndsAWaitingCall(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)
	calls := &callCounter{}
	base := serveHTTPWith(t, deps(t, s), mcpserver.Options{ToolCalled: calls.add}, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	p := &silentPerson{asked: make(chan struct{}), release: release}
	tr, err := transport.NewStreamableHTTP(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithElicitationHandler(p))
	session, err := startSession(testContext(t), c, "session-end-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "pgbus_dlq_discard"
		req.Params.Arguments = map[string]any{"queue": q, "limit": 10}
		res, err := c.CallTool(testContext(t), req)
		answered <- answer{res, err}
	}()
	<-p.asked
	if r := rawRequest(t, http.MethodDelete, base+mcpserver.PathMCP, session, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE the session: %d %s", r.status, r.body)
	}
	a := <-answered
	if a.err != nil {
		t.Fatalf("the call waiting for an answer when its session ended: %v; want a tool error", a.err)
	}
	wantToolError(t, "the call whose session ended", a.res, "session ended", "waited for the user's answer", "nothing was done")
	pgtest.Eventually(t, time.Minute, "the server to be done with the call, counted cancelled", func() bool {
		return calls.count("pgbus_dlq_discard", "cancelled") == 1
	})
	for _, id := range ids {
		if !inDLQ(t, s, q, id) {
			t.Fatalf("message %d was discarded though the user never answered", id)
		}
	}
}
