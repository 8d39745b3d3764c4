package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// openGETStream opens the event stream (GET) of Streamable HTTP session
// id, with the bearer token when one is given, open until the test ends.
func openGETStream(t *testing.T, base, id string, token ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+mcpserver.PathMCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	for _, tok := range token {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = resp.Body.Close()
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the event stream of a session: %d", resp.StatusCode)
	}
}

// wantOpen checks that session id takes a request.
func wantOpen(t *testing.T, base, what, id string) {
	t.Helper()
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools); r.status != http.StatusOK {
		t.Fatalf("tools/list on %s: %d %s; want it open", what, r.status, r.body)
	}
}

// When as many sessions are open as the server keeps, a new one ends the
// session idle the longest that has no event stream open and no call
// under way, instead of being refused: clients that close without DELETE
// leave sessions nobody uses, which would hold every place until they
// expire.
func TestFullSessionsEndTheLongestIdle(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: 3})
	listening := rawSession(t, base)
	openGETStream(t, base, listening) // idle the longest, but its stream is open
	used := rawSession(t, base)
	abandoned := rawSession(t, base)
	wantOpen(t, base, "a session used since the others", used)

	r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize)
	fresh := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || fresh == "" {
		t.Fatalf("initialize with every place taken, one session idle without a stream: %d %s; want a session", r.status, r.body)
	}
	wantSessionNotOpen(t, "the session idle the longest without a stream, after a new one took its place",
		rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, abandoned, rawListTools))
	wantOpen(t, base, "the session with its event stream open", listening)
	wantOpen(t, base, "the session used since", used)
	wantOpen(t, base, "the new session", fresh)
}

// When every session open has an event stream open or a call under way,
// a new one is refused with 503, and its Retry-After is the time until the
// one idle the longest reaches the idle timeout, which the message says.
func TestFullSessionsNoneIdle(t *testing.T) {
	t.Parallel()
	cfg := mcpserver.WithSessionIdleTTL(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: 2}, 2*time.Hour)
	s := testStore(t)
	q := newQueue(t, s)
	deadLetter(t, s, q, `{"n":1}`)
	// The server has a store of its own, as another process would: the
	// call held waiting keeps one of its connections.
	base := serveHTTP(t, deps(t, pgtest.OpenStore(t, pgtest.URL(t)), ops.Options{DatabaseCallTimeout: 5 * time.Minute}), cfg)
	listening := rawSession(t, base)
	openGETStream(t, base, listening)
	calling := rawSession(t, base)
	lock := pgtest.HoldLock(t, s, "q_"+q)
	answered := make(chan int, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pgbus_dlq_retry","arguments":{"queue":"` + q + `","limit":10}}}`
		req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(body))
		if err != nil {
			answered <- 0
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", calling)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		answered <- resp.StatusCode
	}()
	lock.AwaitWaiting(1)

	r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize)
	var msg struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if jerr := json.Unmarshal([]byte(r.body), &msg); jerr != nil || r.status != http.StatusServiceUnavailable || err != nil || retry <= 3600 || retry > 7200 ||
		!strings.Contains(msg.Error.Message, "2 MCP sessions open") || !strings.Contains(msg.Error.Message, "idle timeout (2h0m0s)") || !strings.Contains(msg.Error.Message, "DELETE") {
		t.Fatalf("initialize with every session streaming or calling: %d, Retry-After %q, %s; want 503 with the time until the session idle the longest reaches the idle timeout of 2h", r.status, r.header.Get("Retry-After"), r.body)
	}
	wantOpen(t, base, "the session with its event stream open", listening)

	lock.Release()
	if status := <-answered; status != http.StatusOK {
		t.Fatalf("the call held by the lock: %d; want 200", status)
	}
	// Its call answered, the session is idle: a new one takes its place.
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, "", rawInitialize); r.status != http.StatusOK {
		t.Fatalf("initialize once the call ended: %d %s; want the idle session's place", r.status, r.body)
	}
	wantSessionNotOpen(t, "the session whose call ended, after a new one took its place",
		rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, calling, rawListTools))
}

// A session idle timeout under a second is refused before anything
// starts; none takes the default hour.
func TestSessionIdleTimeoutChecked(t *testing.T) {
	t.Parallel()
	err := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, SessionIdleTimeout: 500 * time.Millisecond}.Check()
	if err == nil || !strings.Contains(err.Error(), "--session-idle-timeout 500ms: give 1s or more") {
		t.Errorf("an idle timeout of 500ms: %v; want it refused, saying to give 1s or more", err)
	}
	for _, d := range []time.Duration{0, time.Second, 2 * time.Hour} {
		if err := (mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, SessionIdleTimeout: d}).Check(); err != nil {
			t.Errorf("an idle timeout of %s: %v", d, err)
		}
	}
}

// Sessions ended to make room for new ones are told to the log at the
// first and then once a minute with how many were ended meanwhile, not
// one line per session: a client that opens a session per request made
// a line of every request. The line shows the bound, which the log's
// redaction hid under a key naming sessions.
func TestSessionsEndedForRoomAreLoggedOnceAMinute(t *testing.T) {
	t.Parallel()
	var logs pgtest.SyncBuffer
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxSessions: 1,
		Logger: slog.New(ops.RedactingHandler(slog.NewTextHandler(&logs, nil)))})
	for range 6 {
		rawSession(t, base) // each ends the one before, idle the longest
	}
	got := logs.String()
	if n := strings.Count(got, "to make room for a new one"); n != 1 || !strings.Contains(got, "max=1") {
		t.Fatalf("five sessions ended to make room: %d lines, want one, showing the bound (max=1):\n%s", n, got)
	}
}
