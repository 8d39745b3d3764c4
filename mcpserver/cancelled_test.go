package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// answersTo reports whether data, a JSON-RPC message, is the answer (a
// result or an error) to request id.
func answersTo(data, id string) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal([]byte(data), &msg) == nil && msg.Method == "" && string(msg.ID) == id
}

// A tool call its client cancels (notifications/cancelled) over
// Streamable HTTP gets no answer, as the specification has it: the call
// stops, and neither its event stream nor a resume of that stream
// (Last-Event-ID) carries a result or an error for it.
func TestCancelledCallOnAStreamIsNotAnswered(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	ids := deadLetter(t, s, q, `{"n":1}`, `{"n":2}`)
	calls := &callCounter{}
	base := serveHTTPWith(t, deps(t, s), mcpserver.Options{ToolCalled: calls.add}, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	init := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"cancels","version":"1"}}}`)
	session := init.header.Get("Mcp-Session-Id")
	if init.status != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	// The discard asks the user first, on its event stream, and waits.
	call := streamRequest(t, testContext(t), http.MethodPost, base, session,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pgbus_dlq_discard","arguments":{"queue":"`+q+`","limit":10}}}`, nil)
	if ct := call.Header.Get("Content-Type"); call.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("the discard: %d %q; want an event stream", call.StatusCode, ct)
	}
	events := streamEvents(call)
	asked := ""
	for e := range events {
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(e.data), &msg) == nil && msg.Method == "elicitation/create" {
			asked = e.id
			break
		}
	}
	if asked == "" {
		t.Fatal("the discard's stream ended without a question with an event id")
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", r.status, r.body)
	}
	for e := range events { // until the stream ends
		if answersTo(e.data, "7") {
			t.Errorf("the cancelled call was answered on its stream: %s", e.data)
		}
	}
	if n := calls.count("pgbus_dlq_discard", "cancelled"); n != 1 {
		t.Errorf("%d cancelled calls of pgbus_dlq_discard counted; want 1", n)
	}
	resumed := streamRequest(t, testContext(t), http.MethodGet, base, session, "", map[string]string{"Last-Event-ID": asked})
	if resumed.StatusCode != http.StatusOK {
		t.Fatalf("resume the stream after event %s: %d", asked, resumed.StatusCode)
	}
	for e := range streamEvents(resumed) {
		if answersTo(e.data, "7") {
			t.Errorf("the cancelled call was answered on its resumed stream: %s", e.data)
		}
	}
	for _, id := range ids {
		if !inDLQ(t, s, q, id) {
			t.Errorf("message %d was discarded though the client cancelled the call", id)
		}
	}
}

// A tool call cancelled before anything of its answer was sent, which
// would have been a JSON body, gets none either: its POST answers an event
// stream that ends without a message. Here a retry waits for a lock on
// its queue's table when its client cancels it.
func TestCancelledCallWithoutAStreamIsNotAnswered(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	ids := deadLetter(t, s, q, `{"n":1}`)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	session := rawSession(t, base)
	held := pgtest.HoldLock(t, s, "q_"+q)
	answered := make(chan rawResponse, 1)
	go func() {
		answered <- rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"pgbus_dlq_retry","arguments":{"queue":"%s","ids":[%d]}}}`, q, ids[0]))
	}()
	held.AwaitWaiting(1)
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", r.status, r.body)
	}
	r := <-answered
	held.Release()
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("the cancelled call's POST: %d %q %s; want an event stream", r.status, r.header.Get("Content-Type"), r.body)
	}
	if strings.TrimSpace(r.body) != "" {
		t.Errorf("the cancelled call's POST carried %q; want nothing", r.body)
	}
	if !inDLQ(t, s, q, ids[0]) {
		t.Errorf("message %d was retried though the client cancelled the call", ids[0])
	}
}

// Over stdio too, a tool call its client cancels gets no answer: its
// output, read to its end once the client closed the input, holds the
// answers of the other requests and none for the cancelled call.
func TestCancelledCallOverStdioIsNotAnswered(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	s := testStore(t)
	q := newQueue(t, s)
	ids := deadLetter(t, s, q, `{"n":1}`)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := mcpserver.ServeStdio(context.Background(), newServer(t, deps(t, s), mcpserver.Options{}), inR, outW, nil)
		_ = outW.Close()
		done <- err
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<16), 1<<24)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cancels","version":"1"}}}`)
	if !lines.Scan() || !answersTo(lines.Text(), "1") {
		t.Fatalf("initialize: %q", lines.Text())
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	held := pgtest.HoldLock(t, s, "q_"+q)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pgbus_dlq_retry","arguments":{"queue":"%s","ids":[%d]}}}`, q, ids[0]))
	held.AwaitWaiting(1)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	_ = inW.Close()
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := <-done; err != nil {
		t.Fatalf("serve stdio: %v", err)
	}
	held.Release()
	pinged := false
	for _, line := range rest {
		if answersTo(line, "7") {
			t.Errorf("the cancelled call was answered: %s", line)
		}
		pinged = pinged || answersTo(line, "8")
	}
	if !pinged {
		t.Errorf("the ping after the cancellation was not answered: %q", rest)
	}
	if !inDLQ(t, s, q, ids[0]) {
		t.Errorf("message %d was retried though the client cancelled the call", ids[0])
	}
}
