package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// streamEvent is one event read off a Streamable HTTP event stream.
type streamEvent struct {
	id   string
	data string
}

// streamEvents sends events of the stream of resp on the returned channel,
// until it ends.
func streamEvents(resp *http.Response) <-chan streamEvent {
	out := make(chan streamEvent, 16)
	go func() {
		defer close(out)
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(make([]byte, 1<<16), 1<<22)
		var e streamEvent
		for lines.Scan() {
			line := lines.Text()
			switch {
			case strings.HasPrefix(line, "id:"):
				e.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "data:"):
				e.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			case line == "":
				if e.data != "" {
					out <- e
				}
				e = streamEvent{}
			}
		}
	}()
	return out
}

// streamRequest sends an MCP request on session at base and returns the
// answer, left open, with ctx ending its connection.
func streamRequest(t *testing.T, ctx context.Context, method, base, session, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, base+mcpserver.PathMCP, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, mcpserver.PathMCP, err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// A Streamable HTTP client whose connection breaks once the answer of its
// call became an event stream has not cancelled the call (the
// specification: a disconnection is not a cancellation; the client
// resumes the stream with Last-Event-ID): the call goes on, and the
// client that resumes answers its question and gets its result. Here a
// discard asks the user, the connection breaks after the question, and
// the resumed stream carries the discard's result once the user answered.
// A client that cancels the call instead (notifications/cancelled) ends
// it, and nothing is discarded.
func TestCallGoesOnWhenItsStreamBreaks(t *testing.T) {
	t.Parallel()
	for _, cancels := range []bool{false, true} {
		name := "resumed"
		if cancels {
			name = "cancelled"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := testStore(t)
			q := newQueue(t, s)
			ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)
			calls := &callCounter{}
			base := serveHTTPWith(t, deps(t, s), mcpserver.Options{ToolCalled: calls.add}, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
			session, question, lastID := askThenBreak(t, base, q)
			if cancels {
				if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); r.status != http.StatusAccepted {
					t.Fatalf("notifications/cancelled: %d %s", r.status, r.body)
				}
				pgtest.Eventually(t, time.Minute, "the cancelled call to end", func() bool {
					return calls.count("pgbus_dlq_discard", "cancelled") == 1
				})
				for _, id := range ids {
					if !inDLQ(t, s, q, id) {
						t.Fatalf("message %d was discarded though the client cancelled the call", id)
					}
				}
				return
			}
			resumed := streamRequest(t, testContext(t), http.MethodGet, base, session, "", map[string]string{"Last-Event-ID": lastID})
			if resumed.StatusCode != http.StatusOK {
				t.Fatalf("resume the stream after event %s: %d", lastID, resumed.StatusCode)
			}
			events := streamEvents(resumed)
			answer := `{"jsonrpc":"2.0","id":` + question + `,"result":{"action":"accept","content":{"confirm":true}}}`
			if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, answer); r.status != http.StatusAccepted && r.status != http.StatusOK {
				t.Fatalf("the user's answer: %d %s", r.status, r.body)
			}
			for e := range events {
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Result *struct {
						IsError bool `json:"isError"`
					} `json:"result"`
				}
				if json.Unmarshal([]byte(e.data), &msg) != nil || string(msg.ID) != "7" {
					continue
				}
				if msg.Result == nil || msg.Result.IsError {
					t.Fatalf("the discard's result on the resumed stream: %s; want it done", e.data)
				}
				for _, id := range ids {
					if inDLQ(t, s, q, id) {
						t.Fatalf("message %d is still in the DLQ after the discard the user confirmed: %s", id, e.data)
					}
				}
				return
			}
			t.Fatal("the resumed stream ended without the discard's result")
		})
	}
}

// askThenBreak starts a session at base whose client can be asked, calls
// pgbus_dlq_discard (request id 7) on every dead message of queue, and
// breaks the call's connection once the question to the user came on its
// event stream. It returns the session, the question's JSON-RPC id and the
// id of its event.
func askThenBreak(t *testing.T, base, queue string) (session, question, lastID string) {
	t.Helper()
	init := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"resume","version":"1"}}}`)
	session = init.header.Get("Mcp-Session-Id")
	if init.status != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	conn, breakConn := context.WithCancel(testContext(t))
	defer breakConn()
	call := streamRequest(t, conn, http.MethodPost, base, session,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pgbus_dlq_discard","arguments":{"queue":"`+queue+`","limit":10}}}`, nil)
	if ct := call.Header.Get("Content-Type"); call.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("the discard: %d %q; want an event stream", call.StatusCode, ct)
	}
	for e := range streamEvents(call) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(e.data), &msg) == nil && msg.Method == "elicitation/create" && e.id != "" {
			return session, string(msg.ID), e.id
		}
	}
	t.Fatal("the discard's stream ended without a question with an event id")
	return "", "", ""
}

// A call that goes on after its connection broke, its answer an event
// stream the client resumes, and that then fails for a cause of its own
// (here the client's answer to its question is an error) was not
// cancelled: pgbus_mcp_tool_calls_total counts it by its own outcome, not
// as cancelled because the POST it came on had ended.
func TestResumedCallThatFailsIsNotCountedCancelled(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	deadLetter(t, s, q, `{"n":1}`)
	calls := &callCounter{}
	base := serveHTTPWith(t, deps(t, s), mcpserver.Options{ToolCalled: calls.add}, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	session, question, lastID := askThenBreak(t, base, q)
	resumed := streamRequest(t, testContext(t), http.MethodGet, base, session, "", map[string]string{"Last-Event-ID": lastID})
	if resumed.StatusCode != http.StatusOK {
		t.Fatalf("resume the stream after event %s: %d", lastID, resumed.StatusCode)
	}
	answer := `{"jsonrpc":"2.0","id":` + question + `,"error":{"code":-32603,"message":"the client could not show the question"}}`
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, answer); r.status != http.StatusAccepted && r.status != http.StatusOK {
		t.Fatalf("the client's error answer: %d %s", r.status, r.body)
	}
	var result string
	pgtest.Eventually(t, time.Minute, "the resumed call to end", func() bool {
		calls.mu.Lock()
		defer calls.mu.Unlock()
		for k, n := range calls.calls {
			if k[0] == "pgbus_dlq_discard" && n > 0 {
				result = k[1]
				return true
			}
		}
		return false
	})
	if result == "cancelled" {
		t.Fatalf("a resumed call that failed on its own was counted %q; want its own outcome", result)
	}
}
