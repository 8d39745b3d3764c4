package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
)

// An initialize that fails gives no Mcp-Session-Id: neither one whose
// params the server cannot take (it gets a JSON-RPC error), nor one the
// gate refuses (a wrong bearer token, a foreign origin). No session is
// left of any of them: with room for one session, the next initialize
// gets it, and the one after is refused while it is in use (its event
// stream open).
func TestFailedInitializeGivesNoSession(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: "tok-123", MaxSessions: 1})
	auth := map[string]string{"Authorization": "Bearer tok-123"}
	for _, c := range []struct {
		name    string
		headers map[string]string
		body    string
		status  int
	}{
		{"params that are no object", auth, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`, http.StatusOK},
		{"a protocol version that is no string", auth, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"n","version":"1"}}}`, http.StatusOK},
		{"capabilities that are no object", auth, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":[],"clientInfo":{"name":"n","version":"1"}}}`, http.StatusOK},
		{"a wrong token", map[string]string{"Authorization": "Bearer wrong"}, rawInitialize, http.StatusUnauthorized},
		{"no token", nil, rawInitialize, http.StatusUnauthorized},
		{"a foreign origin", map[string]string{"Authorization": "Bearer tok-123", "Origin": "https://evil.example"}, rawInitialize, http.StatusForbidden},
	} {
		for range 2 {
			resp, body := doRaw(t, base, rawReq{label: c.name, headers: c.headers, body: c.body})
			if c.status == http.StatusOK && !strings.Contains(body, `"error"`) {
				t.Fatalf("initialize with %s: %d %s; want a JSON-RPC error", c.name, resp.StatusCode, body)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("initialize with %s: %d %s; want %d", c.name, resp.StatusCode, body, c.status)
			}
			if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
				t.Errorf("initialize with %s failed (%d %s), yet gave session %q", c.name, resp.StatusCode, body, id)
			}
		}
	}
	resp, body := doRaw(t, base, rawReq{label: "initialize", headers: auth})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize after the failed ones, with room for one session: %d, session %q, %s; want the session", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}
	openGETStream(t, base, resp.Header.Get("Mcp-Session-Id"), "tok-123")
	if resp, body := doRaw(t, base, rawReq{label: "initialize", headers: auth}); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a second session with room for one, in use: %d %s; want 503", resp.StatusCode, body)
	}
}
