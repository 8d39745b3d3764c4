package mcpserver_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/mcpserver"
)

// Bodies held in memory at once are bounded: once slow requests hold the
// room of sixteen of the largest, the next body is refused with 503 and
// Retry-After, and once they are gone, bodies are taken again.
func TestRequestBodiesAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	const maxBody = 1000
	cfg := mcpserver.WithBodyReadTimeout(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, MaxBodyBytes: maxBody}, 5*time.Minute)
	base := serveHTTP(t, deps(t, testStore(t)), cfg)
	addr := strings.TrimPrefix(base, "http://")
	var slow []net.Conn
	for range 16 {
		slow = append(slow, slowPost(t, addr, mcpserver.PathMCP)) // 1000 bytes announced
	}
	post := func() (int, string, string) {
		t.Helper()
		resp, err := http.Post(base+mcpserver.PathMCP, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Retry-After")
	}
	waitFor(t, "a body refused while sixteen slow ones hold the room", func() bool {
		code, body, retry := post()
		if code != http.StatusServiceUnavailable {
			return false
		}
		if retry != "1" || !strings.Contains(body, "holds as many request bodies as it reads at once") {
			t.Fatalf("refusal %d %q, Retry-After %q; want it to say why and when to try again", code, body, retry)
		}
		return true
	})
	for _, c := range slow {
		_ = c.Close()
	}
	waitFor(t, "a body taken once the slow ones went", func() bool {
		code, body, _ := post()
		if code == http.StatusServiceUnavailable {
			return false
		}
		if strings.Contains(body, "request bodies") {
			t.Fatalf("answer %d %q", code, body)
		}
		return true
	})
}

// waitFor polls ok until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
