package mcpserver_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/mcpserver"
)

// serveWithDashboard runs the MCP server with the real dashboard beside
// it, behind longToken, bodies of maxBody bytes at most (0: the default),
// and probes that answer 200; it returns the server's host:port.
func serveWithDashboard(t *testing.T, maxBody int64) string {
	t.Helper()
	d := deps(t, testStore(t))
	dash, err := dashboard.New(d.Ops, dashboard.Config{AuthToken: longToken})
	if err != nil {
		t.Fatal(err)
	}
	probes := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	cfg := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: longToken, Dashboard: dash, Probes: probes, MaxBodyBytes: maxBody}
	return strings.TrimPrefix(serveHTTP(t, d, cfg), "http://")
}

// sendHead opens a connection to addr and sends the head of a POST to
// path announcing a body of size bytes, with the given Authorization
// header (none when empty); with expect, it asks the server to say
// whether it will read the body (Expect: 100-continue), which net/http
// answers with 100 Continue once the handler starts reading it. It
// returns the connection and the server's first response, read before
// any byte of the body is sent.
func sendHead(t *testing.T, addr, path, auth string, size int, expect bool) (net.Conn, *bufio.Reader, *http.Response, string) {
	t.Helper()
	return sendHeadFrom(t, "127.0.0.1", addr, path, auth, size, expect)
}

// sendHeadFrom is sendHead from the local address from: on loopback, each
// of 127.0.0.0/8 is a client of its own.
func sendHeadFrom(t *testing.T, from, addr, path, auth string, size int, expect bool) (net.Conn, *bufio.Reader, *http.Response, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", path, addr, size)
	if path == mcpserver.PathMCP {
		head = strings.Replace(head, "application/x-www-form-urlencoded", "application/json", 1) + "Accept: application/json, text/event-stream\r\n"
	}
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	if expect {
		head += "Expect: 100-continue\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("POST %s: no response to the head alone: %v", path, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return conn, br, resp, string(body)
}

// A request with a wrong bearer token is refused with 401, and its body
// never read, whatever path it is sent to: a dashboard page (the login
// form included) as well as /mcp. A probe path, which asks no token,
// takes no more than a request that is not logged in may send. Wrong
// tokens sent to the dashboard count toward the throttle of wrong tokens,
// as those sent to /mcp do.
func TestWrongBearerTokenIsRefusedBeforeItsBody(t *testing.T) {
	t.Parallel()
	addr := serveWithDashboard(t, 0)
	const size = 100 << 10 // over what a request not logged in may send
	for _, path := range []string{"/login", "/dlq/retry", mcpserver.PathMCP} {
		for _, expect := range []bool{true, false} {
			_, _, resp, body := sendHead(t, addr, path, "Bearer not-the-token", size, expect)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") || !strings.Contains(body, "bearer token is wrong") {
				t.Errorf("POST %s with a wrong bearer token and a %d-byte body (Expect: 100-continue %v): %d %q, WWW-Authenticate %q, before the body was sent; want 401 saying the token is wrong",
					path, size, expect, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	_, _, resp, body := sendHead(t, addr, mcpserver.PathLivez, "", size, true)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "not logged in") {
		t.Errorf("POST %s without a token and a %d-byte body: %d %q; want 413 before the body, as for any request not logged in", mcpserver.PathLivez, size, resp.StatusCode, body)
	}
	// The right token's body is read: the login form then refuses it for
	// want of its session, not for its size or token.
	conn, br, resp, _ := sendHead(t, addr, "/login", "Bearer "+longToken, size, true)
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("POST /login with the right bearer token and a %d-byte body: %d; want 100 Continue, the body read", size, resp.StatusCode)
	}
	if _, err := io.WriteString(conn, strings.Repeat("a", size)); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /login with the right bearer token, body sent: %v %v; want 403 for the missing session", resp, err)
	}

	// Ten wrong tokens sent to the dashboard hold the client back at /mcp
	// too, the right token included.
	addr = serveWithDashboard(t, 0)
	for i := range 10 {
		req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", fmt.Sprintf("Bearer guess-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET / with wrong bearer token %d: %d; want 401", i+1, resp.StatusCode)
		}
	}
	resp, body = doRaw(t, "http://"+addr, rawReq{label: "initialize after ten wrong tokens", headers: map[string]string{"Authorization": "Bearer " + longToken}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("/mcp with the right token after ten wrong ones sent to the dashboard: %d %q; want 429 with Retry-After", resp.StatusCode, body)
	}
}

// Bodies of requests that are not logged in have a pool of their own
// within the room for bodies: once stalled ones of many clients fill it,
// the next is refused with 503, and a request with the bearer token still
// finds room.
func TestAnonymousBodiesLeaveRoomForAuthenticatedOnes(t *testing.T) {
	t.Parallel()
	const maxBody = 16 << 10 // a budget of 16 such bodies, 256 KB
	addr := serveWithDashboard(t, maxBody)
	held, refused := 0, ""
	for i := range 17 { // enough to fill the whole budget
		// A client of its own for each, so that no client's share is full.
		conn, _, resp, body := sendHeadFrom(t, fmt.Sprintf("127.0.0.%d", 10+i), addr, "/dlq/retry", "", maxBody, true)
		if resp.StatusCode == http.StatusServiceUnavailable {
			refused = body
			break
		}
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("stalled anonymous body %d: %d %q; want 100 Continue", held+1, resp.StatusCode, body)
		}
		if _, err := io.WriteString(conn, "a="); err != nil { // and stall
			t.Fatal(err)
		}
		held++
	}
	if refused == "" || !strings.Contains(refused, "not logged in as it reads at once") {
		t.Fatalf("after %d stalled anonymous bodies: refusal %q; want 503 saying the room of requests not logged in is full", held, refused)
	}
	if held >= 16 {
		t.Fatalf("anonymous bodies held the whole budget (%d of 16)", held)
	}
	resp, body := doRaw(t, "http://"+addr, rawReq{label: "authenticated initialize", headers: map[string]string{"Authorization": "Bearer " + longToken}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
		t.Fatalf("authenticated initialize while %d stalled anonymous bodies fill their pool: %d %q; want 200", held, resp.StatusCode, body)
	}
}
