package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	pathpkg "path"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// fuzzMethods are the methods FuzzHTTPRequest sends. GET is left out: on
// the endpoint it opens an event stream that stays open until the client
// leaves, which a recorded request never does.
var fuzzMethods = []string{http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodPut, http.MethodPatch, http.MethodHead}

// allowedStatus are the answers a request may get: served, accepted, or
// refused as the client's mistake. Never a server error.
var allowedStatus = []int{http.StatusOK, http.StatusAccepted, http.StatusNoContent, http.StatusBadRequest, http.StatusForbidden,
	http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotAcceptable, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}

// FuzzHTTPRequest sends requests of any method, path, headers and body to
// the Streamable HTTP transport's real handler, behind its security checks
// and over a read-only server: none panics, each gets a status from
// allowedStatus, and a body on the endpoint that is not JSON gets a
// JSON-RPC parse error.
func FuzzHTTPRequest(f *testing.F) {
	d := deps(f, testStore(f), ops.Options{ReadOnly: true})
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	h, closeSessions, err := mcpserver.Handler(newServer(f, d, mcpserver.Options{}),
		mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr.String(), MaxBodyBytes: 64 << 10}, addr)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { closeSessions(testContext(f)) })
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	for _, s := range []struct {
		method                             uint8
		path, contentType, session, origin string
		body                               string
	}{
		{0, "/mcp", "application/json", "", "", initialize},
		{0, "/mcp", "application/json", "", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{0, "/mcp", "application/json", "nope", "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pgbus_health"}}`},
		{0, "/mcp", "application/json", "", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{0, "/mcp", "application/json", "", "", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{0, "/mcp", "application/json", "", "", `{"jsonrpc":"2.0","id":4,"result":{}}`},
		{0, "/mcp", "application/json", "", "", "garbage"},
		{0, "/mcp", "application/json; charset=utf-8", "", "", "{\"jsonrpc\":\"2.0\",\"id\":\xff}"},
		{0, "/mcp", "text/plain", "", "", initialize},
		{0, "/mcp", "application/json", "", "http://evil.example", initialize},
		{0, "/other", "application/json", "", "", initialize},
		{1, "/mcp", "", "some-session", "", ""},
		{2, "/mcp", "", "", "http://localhost:3000", ""},
		{3, "/mcp", "application/json", "", "", "{}"},
		{5, "/", "", "", "", ""},
	} {
		f.Add(s.method, s.path, s.contentType, s.session, s.origin, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, m uint8, path, contentType, session, origin string, body []byte) {
		method := fuzzMethods[int(m)%len(fuzzMethods)]
		if !strings.HasPrefix(path, "/") {
			path = "/" + path // as every request line's path is
		}
		r := httptest.NewRequest(method, "/", bytes.NewReader(body))
		r.URL.Path = path
		r.Host = addr.String()
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range map[string]string{"Content-Type": contentType, "Mcp-Session-Id": session, "Origin": origin} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if isRedirect(w.Code) && path != cleanPath(path) {
			// net/http sends a path with dots or doubled slashes to its
			// clean form first.
			if loc := w.Header().Get("Location"); loc != cleanPath(path) {
				t.Fatalf("%s %q: redirected to %q, not %q", method, path, loc, cleanPath(path))
			}
			return
		}
		if !slices.Contains(allowedStatus, w.Code) {
			t.Fatalf("%s %q (%q, session %q, origin %q) %q: status %d: %s", method, path, contentType, session, origin, body, w.Code, w.Body)
		}
		if isGarbageForEndpoint(method, path, contentType, origin, body) {
			checkParseError(t, body, w)
		}
	})
}

func isRedirect(code int) bool {
	return code == http.StatusMovedPermanently || code == http.StatusTemporaryRedirect || code == http.StatusPermanentRedirect
}

// cleanPath is the path net/http's mux redirects p to: p cleaned, keeping
// a final slash.
func cleanPath(p string) string {
	c := pathpkg.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// isGarbageForEndpoint reports whether a request reaches the endpoint's
// JSON-RPC parser with a body that is not JSON.
func isGarbageForEndpoint(method, path, contentType, origin string, body []byte) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return method == http.MethodPost && path == mcpserver.PathMCP && err == nil && media == "application/json" &&
		origin == "" && !json.Valid(body)
}

func checkParseError(t *testing.T, body []byte, w *httptest.ResponseRecorder) {
	t.Helper()
	var msg struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" || msg.Error == nil || msg.Error.Code != -32700 || msg.Error.Message == "" {
		t.Fatalf("body %q: answer %d %q is not a JSON-RPC parse error", body, w.Code, w.Body)
	}
}
