package mcpserver_test

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// Requests through a reverse proxy not named as trusted all have its
// address: one client's wrong tokens or slow bodies then hold back every
// client behind it, the login form included, with nothing said. The log
// says it once, naming the proxy and --trusted-proxies.
func TestUntrustedProxyIsToldOnce(t *testing.T) {
	t.Parallel()
	const warning = "requests come through a reverse proxy that is not trusted"
	for _, c := range []struct {
		name      string
		trusted   []netip.Prefix
		forwarded bool
		want      int
	}{
		{"an untrusted proxy", nil, true, 1},
		{"a trusted proxy", []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, true, 0},
		{"no proxy", nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs pgtest.SyncBuffer
			sec, err := mcpserver.NewSecurity(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, TrustedProxies: c.trusted,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
			if err != nil {
				t.Fatal(err)
			}
			h := sec.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			for range 3 {
				req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+mcpserver.PathMCP, nil)
				req.RemoteAddr = "192.0.2.7:40000"
				if c.forwarded {
					req.Header.Set("X-Forwarded-For", "198.51.100.9")
				}
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
			text := logs.String()
			if got := strings.Count(text, warning); got != c.want {
				t.Fatalf("three requests: the log says %d times that the proxy is not trusted, want %d:\n%s", got, c.want, text)
			}
			if c.want > 0 && (!strings.Contains(text, "proxy=192.0.2.7") || !strings.Contains(text, "--trusted-proxies")) {
				t.Fatalf("the warning does not name the proxy and --trusted-proxies:\n%s", text)
			}
		})
	}
}
