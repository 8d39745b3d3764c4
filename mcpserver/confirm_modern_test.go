package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// wantDLQ checks that queue's DLQ holds exactly the messages in, among
// those the test knows (in and out), and archived discarded ones.
func wantDLQ(t *testing.T, s *store.Store, queue, when string, in, out []int64, archived int) {
	t.Helper()
	for _, id := range in {
		if !inDLQ(t, s, queue, id) {
			t.Fatalf("%s: message %d left the DLQ", when, id)
		}
	}
	for _, id := range out {
		if inDLQ(t, s, queue, id) {
			t.Fatalf("%s: message %d is still in the DLQ", when, id)
		}
	}
	dlq := store.DLQName(queue)
	if live, arch := pgtest.Live(t, s, dlq), pgtest.Archived(t, s, dlq); live != len(in) || arch != archived {
		t.Fatalf("%s: the DLQ holds %d messages and %d archived; want %d and %d", when, live, arch, len(in), archived)
	}
}

// declinedAudits counts the audit entries of op about queue that record a
// declined confirmation, and all the entries about queue.
func declinedAudits(t *testing.T, s *store.Store, op, queue string) (declined, all int) {
	t.Helper()
	page, err := s.ListAudit(testContext(t), store.AuditFilter{Tool: op}, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Items {
		if !strings.Contains(string(e.Arguments), queue) {
			continue
		}
		all++
		if strings.Contains(string(e.Result), `"declined": true`) && strings.Contains(string(e.Arguments), `"asked": true`) {
			declined++
		}
	}
	return declined, all
}

// A client of protocol 2026-07-28 that declares elicitation is asked,
// over stdio and Streamable HTTP, through an input request: the tool
// answers with the question and the client's retry brings the person's
// answer. Declined, cancelled or accepted without the box ticked, nothing
// moves whatever confirm says, the result says declined and the audit log
// and the client's log notifications record it (not the question);
// accepted, exactly the 2 messages asked about are discarded,
// and the one the filter does not select stays. Purge asks too.
func TestModernDiscardAsksThroughInputRequests(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	s := testStore(t)
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			q := newQueue(t, s)
			p := &person{}
			var calls callCounter
			c := modernClient(t, newServer(t, deps(t, s), mcpserver.Options{ToolCalled: calls.add}), tr, "modern-agent", client.WithElicitationHandler(p))
			asked := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)
			other := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "charge", Class: "BadInput", Message: "no such card", Payload: `{"n":3}`})
			all := append(append([]int64(nil), asked...), other...)
			got := collect(c)
			setLevel(t, c, mcp.LoggingLevelInfo)

			for i, answer := range []struct {
				action  mcp.ElicitationResponseAction
				confirm bool
			}{{mcp.ElicitationResponseActionDecline, false}, {mcp.ElicitationResponseActionCancel, false}, {mcp.ElicitationResponseActionAccept, false}} {
				p.action, p.confirm = answer.action, answer.confirm
				var d ops.DLQDiscard
				structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "confirm", true)), &d)
				if !d.Declined || d.Discarded != 0 {
					t.Fatalf("%s (ticked %v): %+v; want declined and nothing discarded", answer.action, answer.confirm, d)
				}
				wantDLQ(t, s, q, string(answer.action), all, nil, 0)
				if qs := p.questions(); len(qs) != i+1 || !strings.Contains(qs[i], "Discard 2 dead messages of the DLQ of "+q) {
					t.Fatalf("%s: asked %q; want one more question naming the 2 messages", answer.action, qs)
				}
			}
			// The question is no write: the first "done" the client is
			// told of is the answered call's, which declined.
			pgtest.Eventually(t, time.Minute, "the discards' log notifications", func() bool {
				return len(got.logsSaying("pgbus_dlq_discard done")) > 0
			})
			if data, _ := got.logsSaying("pgbus_dlq_discard done")[0]["data"].(map[string]any); data["declined"] != true {
				t.Fatalf("first discard log notification: %v; want the declined call's", data)
			}
			if declined, entries := declinedAudits(t, s, "dlq_discard", q); declined != 3 || entries != 3 {
				t.Fatalf("audit: %d declined discards among %d entries; want the 3 declined, and no entry for the questions", declined, entries)
			}

			p.action, p.confirm = mcp.ElicitationResponseActionAccept, true
			var d ops.DLQDiscard
			structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q)), &d)
			if d.Declined || d.Discarded != 2 || len(d.Moved) != 2 {
				t.Fatalf("accepted discard = %+v; want the 2 asked about discarded", d)
			}
			wantDLQ(t, s, q, "accepted", other, asked, 2)
			// Four questions, and four calls that brought their answers.
			if asked, ok := calls.count("pgbus_dlq_discard", "asked"), calls.count("pgbus_dlq_discard", "ok"); asked != 4 || ok != 4 {
				t.Fatalf("tool call counts: %d asked and %d ok; want 4 of each", asked, ok)
			}

			p.action = mcp.ElicitationResponseActionDecline
			var pr ops.DLQPurge
			structured(t, callTool(t, c, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "confirm": true}), &pr)
			if !pr.Declined || pr.Purged != 0 {
				t.Fatalf("declined purge = %+v; want declined", pr)
			}
			wantDLQ(t, s, q, "declined purge", other, asked, 2)
			p.action = mcp.ElicitationResponseActionAccept
			pr = ops.DLQPurge{}
			structured(t, callTool(t, c, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s"}), &pr)
			if pr.Declined || pr.Purged != 2 {
				t.Fatalf("accepted purge = %+v; want the 2 discarded messages purged", pr)
			}
			wantDLQ(t, s, q, "accepted purge", other, asked, 0)
			if qs := p.questions(); len(qs) != 6 || !strings.Contains(qs[5], "Delete for good the 2 dead messages archived in the DLQ of "+q+" at or before ") {
				t.Fatalf("asked %q; want 6 questions, the last about the purge", qs)
			}
		})
	}
}

// retryRewriter is an HTTP transport that edits the params of each
// tools/call retried with an answer (one carrying requestState) on its
// way to the server, as a client or a proxy tampering with it would.
type retryRewriter struct {
	edit func(params map[string]any)
}

func (rw retryRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	var msg map[string]any
	if json.Unmarshal(body, &msg) == nil && msg["method"] == "tools/call" {
		if params, _ := msg["params"].(map[string]any); params["requestState"] != nil {
			rw.edit(params)
			if body, err = json.Marshal(msg); err != nil {
				return nil, err
			}
			r.Header.Set("Mcp-Name", params["name"].(string)) // the header repeats the tool's name
		}
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return http.DefaultTransport.RoundTrip(r)
}

// rewritingClient is modernClient over Streamable HTTP whose retries
// rw rewrites, answering through p.
func rewritingClient(t *testing.T, s *store.Store, rw retryRewriter, p *person) *client.Client {
	t.Helper()
	base := serveServer(t, newServer(t, deps(t, s), mcpserver.Options{}), mcpserver.TransportHTTP)
	tp, err := transport.NewStreamableHTTP(base+mcpserver.PathMCP, transport.WithHTTPBasicClient(&http.Client{Transport: rw}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tp, client.WithElicitationHandler(p))
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "tampering-agent", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil || c.ProtocolVersion() != mcp.ProtocolVersion20260728 {
		t.Fatalf("connect on %s: %v (settled on %q)", mcp.ProtocolVersion20260728, err, c.ProtocolVersion())
	}
	return c
}

// A retry whose request state was altered, or whose arguments differ from
// those the person was asked about, is refused with an error that says so,
// though the person accepted, and nothing moves; a set that changed while
// the person was asked moves nothing either.
func TestModernAnswerBoundToQuestion(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)
	yes := &person{action: mcp.ElicitationResponseActionAccept, confirm: true}

	for _, tc := range []struct {
		name string
		edit func(params map[string]any)
		want string
	}{
		{"altered state", func(p map[string]any) {
			st := p["requestState"].(string)
			p["requestState"] = string(st[0]^1) + st[1:]
		}, "not one pgbus issued, or was altered"},
		{"no state", func(p map[string]any) { delete(p, "requestState") }, "without the state of its question"},
		{"other arguments", func(p map[string]any) { p["arguments"].(map[string]any)["limit"] = 1 }, "arguments differ from those the person was asked about"},
		{"other tool", func(p map[string]any) {
			p["name"], p["arguments"] = "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s"}
		}, "arguments differ from those the person was asked about"},
	} {
		c := rewritingClient(t, s, retryRewriter{edit: tc.edit}, yes)
		wantToolError(t, tc.name, callTool(t, c, "pgbus_dlq_discard", discardArgs(q)), tc.want, "nothing was")
		wantDLQ(t, s, q, tc.name, ids, nil, 0)
	}
	if n := len(yes.questions()); n != 4 {
		t.Fatalf("the person was asked %d times; want once per call", n)
	}

	// A new dead letter matches while the person is asked: the set they
	// were shown is no longer what the filter selects, so nothing moves.
	var later []int64
	busy := &busyPerson{person: yes, during: func() { later = deadLetter(t, s, q, `{"n":3}`) }}
	c := modernClient(t, newServer(t, deps(t, s), mcpserver.Options{}), mcpserver.TransportHTTP, "modern-agent", client.WithElicitationHandler(busy))
	wantToolError(t, "set changed while asked", callTool(t, c, "pgbus_dlq_discard", discardArgs(q)), "changed since they were counted", "for the confirmation asked", "nothing was moved")
	wantDLQ(t, s, q, "set changed while asked", append(ids, later...), nil, 0)
}

// busyPerson is a person during whose answer something else happens.
type busyPerson struct {
	*person
	during func()
}

func (b *busyPerson) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	b.during()
	return b.person.Elicit(ctx, req)
}

// callCounter records the tool calls a server counts, as its metrics do.
type callCounter struct {
	mu    sync.Mutex
	calls map[[2]string]int
}

func (c *callCounter) add(tool, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[[2]string]int{}
	}
	c.calls[[2]string{tool, result}]++
}

func (c *callCounter) count(tool, result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[[2]string{tool, result}]
}
