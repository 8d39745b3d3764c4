package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
)

// originStatus is the status the security gate of a server bound to addr
// (with cfg's other settings) gives a request with the right Host and token
// and the given Origin header: 204 when it passes.
func originStatus(t *testing.T, cfg mcpserver.HTTPConfig, addr, origin string) int {
	t.Helper()
	cfg.Transport, cfg.Addr = mcpserver.TransportHTTP, addr
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/mcp", nil)
	req.Host = "127.0.0.1:8080"
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return gateStatus(t, cfg, addr, req)
}

// Loopback origins (a local web app) pass without --allowed-origins only
// while the server is bound to loopback: bound to every interface or to a
// public address, a page on the caller's own machine is not the server's,
// and its Origin is refused unless configured.
func TestLoopbackOriginsOnlyOnLoopbackBinds(t *testing.T) {
	t.Parallel()
	loopbackOrigins := []string{"http://localhost:5173", "http://127.0.0.1:3000", "https://localhost", "http://[::1]:8080"}
	for _, addr := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"} {
		for _, origin := range loopbackOrigins {
			if got := originStatus(t, mcpserver.HTTPConfig{}, addr, origin); got != http.StatusNoContent {
				t.Errorf("bound to %s, Origin %s: %d, want 204", addr, origin, got)
			}
		}
		if got := originStatus(t, mcpserver.HTTPConfig{}, addr, "https://evil.example"); got != http.StatusForbidden {
			t.Errorf("bound to %s, a foreign Origin: %d, want 403", addr, got)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", "[::]:8080", "192.0.2.10:8080"} {
		cfg := mcpserver.HTTPConfig{AuthToken: longToken, AllowedOrigins: []string{"https://app.example.com"}}
		for _, origin := range loopbackOrigins {
			if got := originStatus(t, cfg, addr, origin); got != http.StatusForbidden {
				t.Errorf("bound to %s, Origin %s: %d, want 403: the loopback exception is for loopback binds only", addr, origin, got)
			}
		}
		for origin, want := range map[string]int{"": http.StatusNoContent, "https://app.example.com": http.StatusNoContent} {
			if got := originStatus(t, cfg, addr, origin); got != want {
				t.Errorf("bound to %s, Origin %q: %d, want %d", addr, origin, got, want)
			}
		}
	}
}
