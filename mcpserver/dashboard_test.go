package mcpserver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// The dashboard gets every path the endpoints leave, behind the Host and
// Origin checks but not the bearer token, which it asks for itself; its
// requests name the caller as the endpoints' do. Its own origin passes off
// loopback, where /mcp still refuses it, and /mcp still needs the token.
func TestDashboardBehindTheGate(t *testing.T) {
	t.Parallel()
	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	var seen []ops.Caller
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, ops.CallerFrom(r.Context()))
		w.WriteHeader(http.StatusNoContent)
	})
	handler := func(transport, addr string) http.Handler {
		t.Helper()
		cfg := mcpserver.HTTPConfig{Transport: transport, Addr: addr, AuthToken: longToken, Dashboard: dash}
		ln, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		h, closeAll, err := mcpserver.Handler(s, cfg, ln)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeAll(testContext(t)) })
		return h
	}
	status := func(h http.Handler, method, path, host, origin string) int {
		t.Helper()
		req := httptest.NewRequest(method, "http://"+host+path, strings.NewReader(""))
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}

	local := handler(mcpserver.TransportHTTP, "127.0.0.1:8080")
	for _, c := range []struct {
		method, path, host, origin string
		want                       int
	}{
		{"GET", "/", "127.0.0.1:8080", "", http.StatusNoContent},
		{"GET", "/dlq/messages", "localhost:8080", "", http.StatusNoContent},
		{"POST", "/dlq/retry", "127.0.0.1:8080", "http://127.0.0.1:8080", http.StatusNoContent},
		{"POST", "/dlq/retry", "127.0.0.1:8080", "https://evil.example", http.StatusForbidden},
		{"GET", "/", "evil.example:8080", "", http.StatusForbidden},
		{"POST", "/mcp", "127.0.0.1:8080", "", http.StatusUnauthorized},
		{"GET", "/.well-known/oauth-protected-resource", "127.0.0.1:8080", "", http.StatusUnauthorized},
	} {
		if got := status(local, c.method, c.path, c.host, c.origin); got != c.want {
			t.Errorf("bound to loopback, %s %s (Host %s, Origin %q): %d, want %d", c.method, c.path, c.host, c.origin, got, c.want)
		}
	}
	if len(seen) != 3 || seen[0].Transport != mcpserver.TransportHTTP || !strings.HasPrefix(seen[0].Principal, "token sha256:") {
		t.Fatalf("the dashboard saw callers %+v", seen)
	}

	// Off loopback only configured origins pass, and the dashboard's own.
	remote := handler(mcpserver.TransportHTTP, "192.0.2.10:8443")
	if got := status(remote, "POST", "/dlq/retry", "192.0.2.10:8443", "https://192.0.2.10:8443"); got != http.StatusNoContent {
		t.Errorf("off loopback, the dashboard's own origin: %d, want 204", got)
	}
	if got := status(remote, "POST", "/dlq/retry", "192.0.2.10:8443", "https://evil.example"); got != http.StatusForbidden {
		t.Errorf("off loopback, a foreign origin: %d, want 403", got)
	}
	if got := status(remote, "POST", "/mcp", "192.0.2.10:8443", "https://192.0.2.10:8443"); got != http.StatusForbidden {
		t.Errorf("off loopback, /mcp from the dashboard's origin: %d, want 403 (the exception is the dashboard's)", got)
	}

	// The legacy SSE transport serves no dashboard.
	if got := status(handler(mcpserver.TransportSSE, "127.0.0.1:8080"), "GET", "/", "127.0.0.1:8080", ""); got != http.StatusUnauthorized {
		t.Errorf("SSE transport, GET / without a token: %d, want 401", got)
	}
}

// The refusals of a Host or an Origin that pgbus dashboard does not
// allow name the flags of the command running, pgbus dashboard; those of
// pgbus serve's transport name pgbus serve. Both named pgbus serve, which
// is not running when the dashboard runs alone.
func TestRefusalsNameTheCommandRunning(t *testing.T) {
	t.Parallel()
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	refused := func(h http.Handler, host, origin string) string {
		t.Helper()
		req := httptest.NewRequest("POST", "http://"+host+"/dlq/retry", strings.NewReader(""))
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("Host %s, Origin %q: %d, want 403", host, origin, rec.Code)
		}
		return rec.Body.String()
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.ServeDashboard(ctx, ln, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr, Dashboard: dash})
	}()
	t.Cleanup(func() { cancel(); <-done })
	alone := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.Path, r.Body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host, req.Header = r.Host, r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
	})

	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	tcp, err := net.ResolveTCPAddr("tcp", "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	beside, closeAll, err := mcpserver.Handler(s, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: "127.0.0.1:8080", Dashboard: dash}, tcp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(testContext(t)) })

	for _, c := range []struct {
		what, command string
		h             http.Handler
		host          string
	}{
		{"pgbus dashboard", "pgbus dashboard", alone, addr},
		{"pgbus serve's dashboard", "pgbus serve", beside, "127.0.0.1:8080"},
	} {
		other := "pgbus serve"
		if c.command == other {
			other = "pgbus dashboard"
		}
		for _, body := range []string{refused(c.h, c.host, "https://evil.example"), refused(c.h, "evil.example", "")} {
			if !strings.Contains(body, c.command+" --allowed-") || strings.Contains(body, other) {
				t.Errorf("%s refused: %q; want it to name %s's flag, not %s", c.what, body, c.command, other)
			}
		}
	}
}
