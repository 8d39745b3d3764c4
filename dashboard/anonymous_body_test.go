package dashboard_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// With a token set, a request that is not logged in may send a small
// body only: it could only be refused, and its bytes would hold the
// server's room for bodies. A logged-in browser and a script with the
// token send the usual sizes.
func TestBodyOfARequestNotLoggedIn(t *testing.T) {
	t.Parallel()
	token := newToken(t)
	addr := serve(t, pgtest.Store(t), serverOpts{token: token})
	form := url.Values{"payload": {strings.Repeat("x", 100<<10)}}

	stranger := newBrowser(t, addr)
	code, body, _ := stranger.post("/dlq/retry", form, nil)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "as many as a request that is not logged in may send; log in") {
		t.Errorf("a 100 KB form not logged in: %d %.300q; want 413 saying to log in", code, body)
	}
	if code, _, _ := stranger.post("/dlq/retry", url.Values{"payload": {"{}"}}, nil); code != http.StatusUnauthorized {
		t.Errorf("a small form not logged in: %d; want 401 from the dashboard", code)
	}

	person := newBrowser(t, addr)
	person.login(token)
	if code, body, _ := person.post("/dlq/retry", form, nil); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("a 100 KB form logged in, without its CSRF token: %d %.300q; want it read, and refused for the token", code, body)
	}
	script := newBrowser(t, addr)
	if code, body, _ := script.post("/dlq/retry", form, http.Header{"Authorization": {"Bearer " + token}}); code == http.StatusRequestEntityTooLarge {
		t.Errorf("a 100 KB form with the bearer token: %d %.300q; want it read", code, body)
	}
}

// One client that is not logged in holds a bounded share of the room for
// bodies of such requests: stalled bodies from one address are refused
// with 503 once they hold it, a header naming another client is not
// believed from a peer that is no trusted proxy, while a client behind the
// trusted proxy still sends its body and a person on another address logs
// in. Once the client's bodies are given back, it may send again.
func TestOneClientCannotFillTheRoomOfRequestsNotLoggedIn(t *testing.T) {
	t.Parallel()
	token := newToken(t)
	const proxy = "127.0.0.2"
	// Bodies of 64 KB at most: a room of 1 MB for bodies, of which 256 KB
	// for those of requests not logged in, 64 stalled bodies of 4 KB.
	addr := serve(t, pgtest.Store(t), serverOpts{token: token, maxBody: 64 << 10,
		trustedProxies: []netip.Prefix{netip.MustParsePrefix(proxy + "/32")}})
	const size, fill = 4 << 10, 64

	var strangers []net.Conn
	held, refusal, retry := 0, "", ""
	for held <= fill {
		conn, resp, body := stallBody(t, addr, "127.0.0.1", "203.0.113.9", size)
		if resp.StatusCode == http.StatusServiceUnavailable {
			refusal, retry = body, resp.Header.Get("Retry-After")
			break
		}
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("stalled body %d of one client not logged in: %d %q; want 100 Continue", held+1, resp.StatusCode, body)
		}
		strangers = append(strangers, conn)
		held++
	}
	if held == 0 || held >= fill/2 {
		t.Fatalf("one client not logged in held %d stalled bodies of %d KB of the room for %d; want some, and a small share", held, size>>10, fill)
	}
	if !strings.Contains(refusal, "this client holds as many request bodies") || !strings.Contains(refusal, "log in, or send the request again in a moment") || retry != "1" {
		t.Fatalf("the body after %d stalled ones of one client: %q, Retry-After %q; want 503 saying this client holds as many bodies as one client may, with Retry-After 1", held, refusal, retry)
	}

	// Another client, named by the trusted proxy, finds room.
	if _, resp, body := stallBody(t, addr, proxy, "198.51.100.7", size); resp.StatusCode != http.StatusContinue {
		t.Errorf("a body of another client behind the trusted proxy while one client holds its share: %d %q; want 100 Continue", resp.StatusCode, body)
	}
	// A person on another address logs in.
	person := newBrowser(t, addr)
	person.c.Transport = &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}
	person.login(token)

	// Once its bodies are given back, the client sends again.
	for _, c := range strangers {
		_ = c.Close()
	}
	waitUntil(t, "the client's bodies given back", func() bool {
		conn, resp, _ := stallBody(t, addr, "127.0.0.1", "", size)
		_ = conn.Close()
		return resp.StatusCode == http.StatusContinue
	})
}

// stallBody sends, from the local address from, the head of a login form
// of size bytes that asks whether the server reads it (Expect:
// 100-continue), with X-Forwarded-For naming forwardedFor unless empty.
// When the server answers 100 Continue, it sends the body's first bytes
// and stalls, holding the body's room until the connection is closed.
func stallBody(t *testing.T, addr, from, forwardedFor string, size int) (net.Conn, *http.Response, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf("POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", addr, size)
	if forwardedFor != "" {
		head += "X-Forwarded-For: " + forwardedFor + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST /login from %s: no response to its head: %v", from, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode == http.StatusContinue {
		if _, err := io.WriteString(conn, "token="); err != nil {
			t.Fatal(err)
		}
	}
	return conn, resp, string(body)
}

// waitUntil polls ok until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
