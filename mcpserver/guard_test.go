package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// person answers elicitation requests as a user of an MCP client would,
// keeping the messages they were shown.
type person struct {
	action  mcp.ElicitationResponseAction
	confirm bool

	mu    sync.Mutex
	asked []string
}

func (p *person) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req.Params.Message)
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: p.action}}
	if p.action == mcp.ElicitationResponseActionAccept {
		res.Content = map[string]any{"confirm": p.confirm}
	}
	return res, nil
}

func (p *person) questions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// guardClient connects mcp-go's Streamable HTTP client to the server at
// base on protocol version 2025-11-25 (server-initiated requests need a
// session); with p, the client declares elicitation and p answers.
func guardClient(t *testing.T, base string, p *person) *client.Client {
	t.Helper()
	var opts []client.ClientOption
	if p != nil {
		opts = append(opts, client.WithElicitationHandler(p))
	}
	tr, err := transport.NewStreamableHTTP(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	if _, err := startSession(testContext(t), c, "guard-test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func discardArgs(q string, more ...any) map[string]any {
	args := map[string]any{"queue": q, "error_class": "Timeout", "limit": 100}
	for i := 0; i+1 < len(more); i += 2 {
		args[more[i].(string)] = more[i+1]
	}
	return args
}

func wantToolError(t *testing.T, what string, res *mcp.CallToolResult, want ...string) {
	t.Helper()
	text := resultText(res)
	if !res.IsError {
		t.Fatalf("%s: want a tool error, got %s", what, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Fatalf("%s: error %q does not contain %q", what, text, w)
		}
	}
}

// Over a real transport: a discard's dry run moves nothing and matches the
// real discard given its expect; a retry or discard given an expect is
// refused, moving nothing, once a new dead letter matches or another call
// retried one of the set.
func TestGuardedWritesOverHTTP(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)

	var dry ops.DLQDiscard
	structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "dry_run", true)), &dry)
	if !dry.DryRun || dry.Discarded != 2 || len(dry.Moved) != 2 || dry.Expect == "" || !inDLQ(t, s, q, ids[0]) || !inDLQ(t, s, q, ids[1]) {
		t.Fatalf("discard dry run = %+v; want both listed, an expect, and both still dead", dry)
	}

	more := deadLetter(t, s, q, `{"n":3}`)
	wantToolError(t, "discard after a new dead letter", callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "expect", dry.Expect, "confirm", true)),
		"changed since they were counted, by the dry run", "nothing was moved", `"dry_run":true`)
	var retryDry ops.DLQRetry
	structured(t, callTool(t, c, "pgbus_dlq_retry", discardArgs(q, "dry_run", true)), &retryDry)
	if _, err := s.RetryDead(testContext(t), q, more, store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, "retry after another call retried one", callTool(t, c, "pgbus_dlq_retry", discardArgs(q, "expect", retryDry.Expect)),
		"changed since they were counted, by the dry run", "nothing was moved")
	if !inDLQ(t, s, q, ids[0]) || !inDLQ(t, s, q, ids[1]) || pgtest.Live(t, s, q) != 1 {
		t.Fatal("a refused call moved messages")
	}

	var real ops.DLQDiscard
	structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "expect", dry.Expect, "confirm", true)), &real)
	if real.Discarded != 2 || len(real.Moved) != 2 || real.Moved[0] != dry.Moved[0] || real.Moved[1] != dry.Moved[1] || inDLQ(t, s, q, ids[0]) || inDLQ(t, s, q, ids[1]) {
		t.Fatalf("discard with the dry run's expect = %+v; want exactly %+v", real, dry.Moved)
	}
}

// A client that supports elicitation is asked: accepted, the discard
// happens whatever confirm says; declined or cancelled, nothing changes
// and the result says so. Purge asks too.
func TestDiscardAsksThroughElicitation(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)

	for _, p := range []*person{{action: mcp.ElicitationResponseActionDecline}, {action: mcp.ElicitationResponseActionCancel},
		{action: mcp.ElicitationResponseActionAccept, confirm: false}} {
		var d ops.DLQDiscard
		structured(t, callTool(t, guardClient(t, base, p), "pgbus_dlq_discard", discardArgs(q, "confirm", true)), &d)
		if !d.Declined || d.Discarded != 0 || !inDLQ(t, s, q, ids[0]) || !inDLQ(t, s, q, ids[1]) {
			t.Fatalf("%s (confirm %v): %+v; want declined and nothing discarded", p.action, p.confirm, d)
		}
		if asked := p.questions(); len(asked) != 1 || !strings.Contains(asked[0], "Discard 2 dead messages") {
			t.Fatalf("%s: asked %q; want one question naming the 2 messages", p.action, asked)
		}
	}

	yes := &person{action: mcp.ElicitationResponseActionAccept, confirm: true}
	c := guardClient(t, base, yes)
	var d ops.DLQDiscard
	structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q)), &d)
	if d.Declined || d.Discarded != 2 || inDLQ(t, s, q, ids[0]) || inDLQ(t, s, q, ids[1]) || len(yes.questions()) != 1 {
		t.Fatalf("accepted discard = %+v (asked %q); want both discarded", d, yes.questions())
	}

	no := &person{action: mcp.ElicitationResponseActionDecline}
	var p ops.DLQPurge
	structured(t, callTool(t, guardClient(t, base, no), "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "confirm": true}), &p)
	if !p.Declined || p.Purged != 0 || pgtest.Archived(t, s, store.DLQName(q)) != 2 || len(no.questions()) != 1 {
		t.Fatalf("declined purge = %+v; want declined and the 2 archived messages kept", p)
	}
}

// A client without elicitation falls back to the confirm argument:
// refused without it, done with it.
func TestDiscardWithoutElicitationNeedsConfirm(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	ids := deadLetter(t, s, q, `{"n":1}`)

	wantToolError(t, "discard without confirm", callTool(t, c, "pgbus_dlq_discard", discardArgs(q)), "confirm", `"confirm":true`)
	if !inDLQ(t, s, q, ids[0]) {
		t.Fatal("a discard without confirm moved the message")
	}
	var d ops.DLQDiscard
	structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "confirm", true)), &d)
	if d.Discarded != 1 || inDLQ(t, s, q, ids[0]) {
		t.Fatalf("discard with confirm = %+v; want the message discarded", d)
	}
	wantToolError(t, "purge without confirm", callTool(t, c, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s"}), "confirm")
	var p ops.DLQPurge
	structured(t, callTool(t, c, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "confirm": true}), &p)
	if p.Purged != 1 || pgtest.Archived(t, s, store.DLQName(q)) != 0 {
		t.Fatalf("purge with confirm = %+v; want the discarded message purged", p)
	}
}
