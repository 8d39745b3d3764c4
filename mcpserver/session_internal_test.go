package mcpserver

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// A session that ends after the guard looked, as the idle reaper can end
// it while the request is on its way to mcp-go, gets the guard's JSON-RPC
// refusal, not mcp-go's plain "Invalid session ID"; any other answer of
// mcp-go, a 404 for a session still open included, passes unchanged.
func TestSessionEndedOnTheWayGetsTheGuardsRefusal(t *testing.T) {
	t.Parallel()
	m := newSessions(HTTPConfig{MaxSessions: 10, Logger: slog.New(slog.DiscardHandler)})
	id := m.Generate()
	var next http.HandlerFunc
	h := m.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next(w, r) }))
	call := func() *http.Response {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		r.Header.Set(server.HeaderKeySessionID, id)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}

	next = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\n")
		w.(http.Flusher).Flush()
	}
	if res := call(); res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" || responseBody(t, res) != "event: message\n" {
		t.Fatalf("a streamed answer on an open session: %d %q; want it passed on", res.StatusCode, res.Header.Get("Content-Type"))
	}
	next = func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no such thing", http.StatusNotFound) }
	if res := call(); res.StatusCode != http.StatusNotFound || !strings.Contains(responseBody(t, res), "no such thing") {
		t.Fatalf("mcp-go's 404 on a session still open: %d; want it passed on", res.StatusCode)
	}

	next = func(w http.ResponseWriter, _ *http.Request) {
		_, _ = m.Terminate(id) // the reaper, between the guard's look and mcp-go's
		http.Error(w, "Invalid session ID", http.StatusNotFound)
	}
	res := call()
	var got struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	text := responseBody(t, res)
	if err := json.Unmarshal([]byte(text), &got); err != nil || res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "application/json" ||
		got.Error.Code != sessionNotFound || !strings.Contains(got.Error.Message, "start a new session by sending initialize") {
		t.Fatalf("a session ended on the way: %d %q %s; want 404 with the JSON-RPC refusal", res.StatusCode, res.Header.Get("Content-Type"), text)
	}
}

func responseBody(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
