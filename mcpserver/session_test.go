package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

const (
	rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	rawListTools  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// rawResponse is an HTTP answer as received.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// rawRequest sends one request to url with the session header set when
// session is not empty, and reads the whole answer.
func rawRequest(t *testing.T, method, url, session, body string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, url, err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// rawSession initializes a session over raw HTTP and returns its id.
func rawSession(t *testing.T, base string) string {
	t.Helper()
	r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize)
	id := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q, %s", r.status, id, r.body)
	}
	return id
}

// wantSessionNotOpen checks that a request on session gets 404 with a
// JSON-RPC error that says to initialize again.
func wantSessionNotOpen(t *testing.T, what string, r rawResponse) {
	t.Helper()
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	err := json.Unmarshal([]byte(r.body), &msg)
	if r.status != http.StatusNotFound || err != nil || msg.JSONRPC != "2.0" || string(msg.ID) != "null" ||
		msg.Error.Code != -32001 || !strings.Contains(msg.Error.Message, "send") || !strings.Contains(msg.Error.Message, "initialize") {
		t.Fatalf("%s: %d %s; want 404 with a JSON-RPC error saying to initialize again", what, r.status, r.body)
	}
}

// A session id the server never issued is refused on every method, however
// well formed: mcp-go's own form, or one of the server's own shape.
func TestSessionNotIssued(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	issued := rawSession(t, base)
	for _, id := range []string{"mcp-session-2b0e8b8e-7f5c-4d2a-9a57-3c1f0e6d9b11", strings.Repeat("ab", 32), issued + "0"} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			wantSessionNotOpen(t, method+" on "+id, rawRequest(t, method, base+mcpserver.PathMCP, id, rawListTools))
		}
	}
	if r := rawRequest(t, http.MethodGet, base+mcpserver.PathMCP, "", ""); r.status != http.StatusBadRequest || !strings.Contains(r.body, "initialize") {
		t.Fatalf("GET without a session: %d %s; want 400 saying to initialize first", r.status, r.body)
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, issued, rawListTools); r.status != http.StatusOK || !strings.Contains(r.body, "pgbus_dlq_list") {
		t.Fatalf("tools/list on the issued session: %d %s", r.status, r.body)
	}
}

// Issued ids are 256 random bits in hex, a new one per initialize.
func TestSessionIDsAreRandom(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for range 5 {
		id := rawSession(t, base)
		if !hex64.MatchString(id) || seen[id] {
			t.Fatalf("session id %q: want 64 hex digits, not seen before (%v)", id, seen)
		}
		seen[id] = true
	}
}

// newSessionClient returns mcp-go's Streamable HTTP client of the server
// at base, started and initialized on protocol version 2025-11-25, the last
// one with sessions (on later versions mcp-go's client has none); it is
// closed when the test ends.
func newSessionClient(t *testing.T, base string) (*client.Client, string) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	id, err := startSession(testContext(t), c, "pgbus-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, id
}

// startSession starts c and initializes a session on protocol version
// 2025-11-25 as client name; it returns the session's id.
func startSession(ctx context.Context, c *client.Client, name string) (string, error) {
	if err := startLegacy(ctx, c, name); err != nil {
		return "", err
	}
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	if id == "" {
		return "", errors.New("initialize: the server issued no session")
	}
	return id, nil
}

// startLegacy starts c and initializes it on protocol version 2025-11-25
// as client name.
func startLegacy(ctx context.Context, c *client.Client, name string) error {
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// A session ended by DELETE, here by mcp-go's client closing, is refused
// from then on, and the client can start a new one.
func TestSessionEndedByDelete(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, id := newSessionClient(t, base)
	if _, ok := toolNames(t, c)["pgbus_health"]; !ok {
		t.Fatal("pgbus_health is not listed on the open session")
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools); r.status != http.StatusOK {
		t.Fatalf("tools/list on the client's session over raw HTTP: %d %s", r.status, r.body)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close (DELETE) the session: %v", err)
	}
	for i := range 3 {
		wantSessionNotOpen(t, fmt.Sprintf("request %d after DELETE", i+1), rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools))
	}
	wantSessionNotOpen(t, "a second DELETE", rawRequest(t, http.MethodDelete, base+mcpserver.PathMCP, id, ""))

	again, got := newSessionClient(t, base)
	if got == id {
		t.Fatalf("the new session's id %q is the old one", got)
	}
	if _, ok := toolNames(t, again)["pgbus_health"]; !ok {
		t.Fatal("pgbus_health is not listed on the new session")
	}
}

// mcp-go's client, told its session is gone, reports that it must
// initialize again.
func TestSessionClientToldToInitialize(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, id := newSessionClient(t, base)
	if r := rawRequest(t, http.MethodDelete, base+mcpserver.PathMCP, id, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE the session: %d %s", r.status, r.body)
	}
	_, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
	if err == nil || !strings.Contains(err.Error(), "re-initialize") {
		t.Fatalf("list tools on a deleted session: %v; want mcp-go's session terminated error", err)
	}
}

// An idle session expires, and is refused from then on.
func TestSessionIdleExpiry(t *testing.T) {
	t.Parallel()
	cfg := mcpserver.WithSessionIdleTTL(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}, time.Millisecond)
	base := serveHTTP(t, deps(t, testStore(t)), cfg)
	id := rawSession(t, base)
	var last rawResponse
	pgtest.Eventually(t, time.Minute, "the idle session to expire", func() bool {
		last = rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools)
		return last.status != http.StatusOK
	})
	wantSessionNotOpen(t, "a request after the session expired", last)
}

// Sessions end with the server: another server does not take their ids.
func TestSessionEndsWithServer(t *testing.T) {
	t.Parallel()
	d := deps(t, testStore(t))
	base, stop := startHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	id := rawSession(t, base)
	stop()
	next := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	wantSessionNotOpen(t, "the old server's session on a new server", rawRequest(t, http.MethodPost, next+mcpserver.PathMCP, id, rawListTools))
}

// Many clients at once each get their own session, and each works.
func TestSessionsConcurrent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	queue := newQueue(t, s)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, err := useSession(testContext(t), base, queue)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, id := range ids {
		if id == "" || seen[id] {
			t.Fatalf("client %d has session %q; want one of its own (%v)", i, id, ids)
		}
		seen[id] = true
	}
}

// useSession starts a session with mcp-go's client, reads the stats of
// queue three times on it and ends it; it returns the session's id. It
// reports failures as errors, so that goroutines may call it.
func useSession(ctx context.Context, base, queue string) (string, error) {
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		return "", err
	}
	defer c.Close()
	id, err := startSession(ctx, c, "concurrent")
	if err != nil {
		return "", err
	}
	for range 3 {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "pgbus_queue_stats", map[string]any{"queue": queue}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError || !strings.Contains(resultText(res), queue) {
			return id, fmt.Errorf("queue stats: %v %v", err, res)
		}
	}
	return id, nil
}

// Over SSE, a message posted for a session id the server did not issue, or
// for one whose event stream has closed, is refused: the transport keeps
// only the sessions of open streams.
func TestSSESessionIDs(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE})
	message := func(session string) rawResponse {
		return rawRequest(t, http.MethodPost, base+mcpserver.PathMessage+"?sessionId="+session, "", rawInitialize)
	}
	if r := message("2b0e8b8e-7f5c-4d2a-9a57-3c1f0e6d9b11"); r.status == http.StatusAccepted || !strings.Contains(r.body, "session") {
		t.Fatalf("a message for a session never issued: %d %s; want it refused", r.status, r.body)
	}
	ctx, closeStream := context.WithCancel(testContext(t))
	defer closeStream()
	session := openSSEStream(t, ctx, base)
	if r := message(session); r.status != http.StatusAccepted {
		t.Fatalf("a message on the open stream's session: %d %s; want 202", r.status, r.body)
	}
	closeStream()
	pgtest.Eventually(t, time.Minute, "messages for the closed stream's session to be refused", func() bool {
		r := message(session)
		return r.status != http.StatusAccepted && strings.Contains(r.body, "session")
	})
}

// openSSEStream opens an SSE stream, until ctx ends, and returns the
// session id of the message endpoint the server announced on it.
func openSSEStream(t *testing.T, ctx context.Context, base string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+mcpserver.PathSSE, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open the SSE stream: %v", err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "sessionId="); ok {
			return rest
		}
	}
	t.Fatalf("the SSE stream announced no endpoint: %v", lines.Err())
	return ""
}

// Sessions are bounded: past MaxSessions, with every session in use (its
// event stream open), a new session is refused with 503, Retry-After and
// a JSON-RPC error saying what to do, while the open ones keep working;
// once one ends, a new one starts.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: 2})
	first := rawSession(t, base)
	c, second := newSessionClient(t, base)
	openGETStream(t, base, first)
	openGETStream(t, base, second)
	r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize)
	var msg struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &msg); err != nil || r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" ||
		r.header.Get("Mcp-Session-Id") != "" || !strings.Contains(msg.Error.Message, "2 MCP sessions open") || !strings.Contains(msg.Error.Message, "DELETE") {
		t.Fatalf("a third session: %d, Retry-After %q, session %q, %s", r.status, r.header.Get("Retry-After"), r.header.Get("Mcp-Session-Id"), r.body)
	}
	for _, id := range []string{first, second} {
		if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools); r.status != http.StatusOK {
			t.Fatalf("tools/list on an open session while full: %d %s", r.status, r.body)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close (DELETE) a session: %v", err)
	}
	if third := rawSession(t, base); third == first || third == second {
		t.Fatalf("the new session reuses id %q", third)
	}
}

// A server that keeps one session counts it in the singular when it
// refuses a second.
func TestSessionsBoundedAtOne(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: 1})
	_, id := newSessionClient(t, base)
	openGETStream(t, base, id)
	r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize)
	var msg struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &msg); err != nil || r.status != http.StatusServiceUnavailable ||
		!strings.Contains(msg.Error.Message, "the server has 1 MCP session open, as many as it keeps") {
		t.Fatalf("a second session with room for one: %d, %s; want 503 saying the server has 1 MCP session open", r.status, r.body)
	}
}

// TestSessionsBoundedUnderABurst: initializes that arrive together never
// leave more sessions open than the bound, and a request that starts no
// session gives its place back.
func TestSessionsBoundedUnderABurst(t *testing.T) {
	t.Parallel()
	const bound, burst = 5, 30
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: bound})
	ctx := testContext(t)
	type answer struct {
		status int
		id     string
		err    error
	}
	answers := make(chan answer, burst)
	bodies := make([]*io.PipeWriter, burst)
	// Each request says when it has its connection and has written its
	// headers; its body waits for the test.
	connected := make(chan struct{}, burst)
	trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { connected <- struct{}{} }})
	for i := range burst {
		pr, pw := io.Pipe()
		bodies[i] = pw
		go func() {
			req, err := http.NewRequestWithContext(trace, http.MethodPost, base+mcpserver.PathMCP, pr)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answers <- answer{status: resp.StatusCode, id: resp.Header.Get("Mcp-Session-Id")}
		}()
	}
	// Once every request has connected and written its headers (the
	// server may refuse some at once), their bodies end together, so that
	// the server takes them at once.
	var got []answer
	for i := 0; i < burst; {
		select {
		case <-connected:
			i++
		case a := <-answers:
			if a.err != nil {
				t.Fatalf("an initialize failed before its body was sent: %v", a.err)
			}
			got = append(got, a)
		}
	}
	for _, pw := range bodies {
		go func() {
			_, _ = io.WriteString(pw, rawInitialize)
			pw.Close()
		}()
	}
	for len(got) < burst {
		got = append(got, <-answers)
	}
	var issued []string
	for i, a := range got {
		switch {
		case a.err != nil:
			t.Fatalf("initialize %d: %v", i, a.err)
		case a.status == http.StatusOK && a.id != "":
			issued = append(issued, a.id)
		case a.status != http.StatusServiceUnavailable:
			t.Fatalf("initialize %d: %d; want 200 or 503", i, a.status)
		}
	}
	// A session answered before others arrived may have been ended, idle,
	// to make room for one of them; never more than the bound are open.
	var open []string
	for _, id := range issued {
		if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools); r.status == http.StatusOK {
			open = append(open, id)
		}
	}
	if len(open) != bound {
		t.Fatalf("%d of %d initializes at once opened a session, %d of them still open; want exactly %d open", len(issued), burst, len(open), bound)
	}
	// A POST without a session that is no initialize starts none: once a
	// session ends, the place goes to the next initialize, not to it.
	if r := rawRequest(t, http.MethodDelete, base+mcpserver.PathMCP, open[0], ""); r.status != http.StatusOK {
		t.Fatalf("DELETE a session: %d %s", r.status, r.body)
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawListTools); r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("tools/list without a session started one: %d %s", r.status, r.body)
	}
	open[0] = rawSession(t, base)
	for _, id := range open {
		openGETStream(t, base, id)
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize); r.status != http.StatusServiceUnavailable {
		t.Fatalf("an initialize past the bound again, every session in use: %d %s", r.status, r.body)
	}
}

// A POST without a session that is no initialize, and a JSON-RPC batch
// with or without one, get a JSON-RPC error saying what to send instead
// (they got a plain-text 404, or "not valid json"); neither opens a
// session.
func TestRequestsThatCannotStartOrJoinASession(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	issued := rawSession(t, base)
	for _, c := range []struct {
		what, session, body, says string
	}{
		{"tools/list without a session", "", rawListTools, "send initialize first"},
		{"a batch without a session", "", "[" + rawInitialize + "]", "batches are not taken"},
		{"a batch in a session", issued, "  [" + rawListTools + "," + rawListTools + "]", "batches are not taken"},
	} {
		r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, c.session, c.body)
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		err := json.Unmarshal([]byte(r.body), &msg)
		if r.status != http.StatusBadRequest || err != nil || msg.JSONRPC != "2.0" || msg.Error.Code != -32600 || !strings.Contains(msg.Error.Message, c.says) {
			t.Errorf("%s: %d %s; want 400 with a JSON-RPC error saying %q", c.what, r.status, r.body, c.says)
		}
		if id := r.header.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("%s opened session %s", c.what, id)
		}
	}
	// The session still works.
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, issued, rawListTools); r.status != http.StatusOK || !strings.Contains(r.body, "pgbus_dlq_list") {
		t.Fatalf("tools/list in the session after the refusals: %d %s", r.status, r.body)
	}
}

// An initialize that starts no usable session holds no place: one sent as
// a notification (no id) is refused, one whose params cannot be read gets
// its error and any id it was given is ended at once, and the bound is
// left whole for the initializes that succeed.
func TestInitializeThatStartsNoSessionHoldsNoPlace(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: 2})
	const (
		notification = `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}}`
		nullID       = `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"n","version":"1"}}}`
		badParams    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`
	)
	for range 2 {
		for _, body := range []string{notification, nullID} {
			r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", body)
			var msg struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.body), &msg); err != nil || r.status != http.StatusBadRequest || msg.Error.Code != -32600 ||
				!strings.Contains(msg.Error.Message, "id") || r.header.Get("Mcp-Session-Id") != "" {
				t.Fatalf("initialize without an id %s: %d, session %q, %s; want 400 with a JSON-RPC error asking for an id", body, r.status, r.header.Get("Mcp-Session-Id"), r.body)
			}
		}
		r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", badParams)
		if !strings.Contains(r.body, `"error"`) {
			t.Fatalf("initialize with unreadable params: %d %s; want a JSON-RPC error", r.status, r.body)
		}
		if id := r.header.Get("Mcp-Session-Id"); id != "" {
			wantSessionNotOpen(t, "tools/list on the id of a failed initialize", rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools))
		}
	}
	first, second := rawSession(t, base), rawSession(t, base)
	if first == second {
		t.Fatalf("two initializes gave one session %q", first)
	}
	openGETStream(t, base, first)
	openGETStream(t, base, second)
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize); r.status != http.StatusServiceUnavailable {
		t.Fatalf("a third session with room for two in use: %d %s; want 503", r.status, r.body)
	}
}

// getSSE opens an SSE stream, until ctx ends, and returns its status and,
// when it opened, the session id the server announced on it; a refusal's
// body is returned in full.
func getSSE(t *testing.T, ctx context.Context, base string) (status int, session, body string, header http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+mcpserver.PathSSE, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", mcpserver.PathSSE, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, "", string(b), resp.Header
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "sessionId="); ok {
			return resp.StatusCode, rest, "", resp.Header
		}
	}
	t.Fatalf("the SSE stream announced no endpoint: %v", lines.Err())
	return 0, "", "", nil
}

// The legacy SSE transport keeps at most MaxSessions event streams open,
// as Streamable HTTP keeps sessions: one more is refused with 503,
// Retry-After and a JSON-RPC error saying what to do, while the open ones
// keep working; once one closes, a new one opens.
func TestSSESessionsBounded(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE, MaxSessions: 2})
	first, closeFirst := context.WithCancel(testContext(t))
	defer closeFirst()
	openSSEStream(t, first, base)
	second := openSSEStream(t, testContext(t), base)

	status, _, body, header := getSSE(t, testContext(t), base)
	var msg struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" ||
		!strings.Contains(msg.Error.Message, "the server has 2 MCP sessions open") {
		t.Fatalf("a third SSE stream with room for two: %d, Retry-After %q, %s; want 503 saying the server has 2 MCP sessions open", status, header.Get("Retry-After"), body)
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMessage+"?sessionId="+second, "", rawInitialize); r.status != http.StatusAccepted {
		t.Fatalf("a message on an open stream's session while full: %d %s; want 202", r.status, r.body)
	}
	closeFirst()
	pgtest.Eventually(t, time.Minute, "a new SSE stream to open once one closed", func() bool {
		status, session, _, _ := getSSE(t, testContext(t), base)
		return status == http.StatusOK && session != ""
	})
}
