package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

type rawReq struct {
	label   string
	path    string
	method  string
	host    string
	headers map[string]string
	body    string
}

func doRaw(t *testing.T, base string, r rawReq) (*http.Response, string) {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.path == "" {
		r.path = mcpserver.PathMCP
	}
	if r.body == "" && r.method == http.MethodPost {
		r.body = initializeBody
	}
	req, err := http.NewRequestWithContext(testContext(t), r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	if r.host != "" {
		req.Host = r.host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", r.label, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp, string(b)
}

// The HTTP gate: foreign Origin and Host are refused, a token is checked in
// constant time with the right challenge, oversized bodies get 413, and the
// right request passes.
func TestHTTPSecurityGate(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	const token = "correct-horse-battery-staple"
	for _, tr := range []string{mcpserver.TransportHTTP, mcpserver.TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: tr, AuthToken: token, AllowedOrigins: []string{"https://app.example.com"}})
			port := base[strings.LastIndex(base, ":")+1:]
			auth := "Bearer " + token
			path, method := mcpserver.PathMCP, http.MethodPost
			if tr == mcpserver.TransportSSE {
				// The message endpoint is where calls go.
				path = mcpserver.PathMessage + "?sessionId=nope"
			}
			cases := []struct {
				rawReq
				status int
				want   string
			}{
				{rawReq{label: "foreign origin", headers: map[string]string{"Authorization": auth, "Origin": "https://evil.example"}}, 403, "Origin"},
				{rawReq{label: "null origin", headers: map[string]string{"Authorization": auth, "Origin": "null"}}, 403, "should not be: any page can send it"},
				{rawReq{label: "foreign host", host: "evil.example:" + port, headers: map[string]string{"Authorization": auth}}, 403, "Host"},
				{rawReq{label: "rebound host, right port", host: "attacker.test:" + port, headers: map[string]string{"Authorization": auth}}, 403, "Host"},
				{rawReq{label: "localhost, wrong port", host: "localhost:1", headers: map[string]string{"Authorization": auth}}, 403, "Host"},
				{rawReq{label: "no token"}, 401, "token"},
				{rawReq{label: "wrong token", headers: map[string]string{"Authorization": "Bearer " + token + "x"}}, 401, "wrong"},
				{rawReq{label: "basic auth", headers: map[string]string{"Authorization": "Basic Zm9vOmJhcg=="}}, 401, "token"},
				{rawReq{label: "body over 4 MB", headers: map[string]string{"Authorization": auth}, body: `{"x":"` + strings.Repeat("a", 5<<20) + `"}`}, 413, "bytes"},
			}
			for _, c := range cases {
				c.path, c.method = path, method
				resp, body := doRaw(t, base, c.rawReq)
				if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
					t.Errorf("%s: %d %q, want %d mentioning %q", c.label, resp.StatusCode, body, c.status, c.want)
				}
				if c.label == "null origin" && strings.Contains(body, "--allowed-origins") {
					t.Errorf("null origin: %q advises allowing it", body)
				}
				if c.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: WWW-Authenticate %q, want a Bearer challenge", c.label, resp.Header.Get("WWW-Authenticate"))
				}
			}
			if tr == mcpserver.TransportSSE {
				// GET /sse without a token: refused before any stream opens.
				resp, _ := doRaw(t, base, rawReq{label: "sse stream without token", path: mcpserver.PathSSE, method: http.MethodGet})
				if resp.StatusCode != 401 {
					t.Errorf("GET /sse without token: %d, want 401", resp.StatusCode)
				}
				return
			}
			for _, ok := range []rawReq{
				{label: "right token"},
				{label: "configured origin", headers: map[string]string{"Origin": "https://app.example.com"}},
				{label: "loopback origin", headers: map[string]string{"Origin": "http://localhost:5173"}},
				{label: "localhost host", host: "localhost:" + port},
				{label: "lower-case scheme", headers: map[string]string{"Authorization": "bearer " + token}},
			} {
				if ok.headers == nil {
					ok.headers = map[string]string{}
				}
				if _, set := ok.headers["Authorization"]; !set {
					ok.headers["Authorization"] = auth
				}
				resp, body := doRaw(t, base, ok)
				if resp.StatusCode != 200 || !strings.Contains(body, `"serverInfo"`) {
					t.Errorf("%s: %d %q, want 200 and an initialize result", ok.label, resp.StatusCode, body)
				}
			}
		})
	}
}

// A refused request runs nothing: a pgbus_queue_pause sent with a wrong
// token or from a foreign origin leaves the queue running, and the same
// call with the right credentials pauses it.
func TestRefusedCallsRunNothing(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	queue := newQueue(t, s)
	const token = "s3cret-token"
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: token})

	var mu sync.Mutex
	headers := map[string]string{"Authorization": "Bearer " + token}
	setHeaders := func(h map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		headers = h
	}
	c, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithHTTPHeaderFunc(func(context.Context) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return headers
	}))
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	pause := mcp.CallToolRequest{}
	pause.Params.Name, pause.Params.Arguments = "pgbus_queue_pause", map[string]any{"queue": queue}
	for label, h := range map[string]map[string]string{
		"no token":       {},
		"wrong token":    {"Authorization": "Bearer nope"},
		"foreign origin": {"Authorization": "Bearer " + token, "Origin": "https://evil.example"},
	} {
		setHeaders(h)
		if res, err := c.CallTool(testContext(t), pause); err == nil {
			t.Errorf("%s: pause answered %v %s; want the request refused", label, res.IsError, resultText(res))
		}
		if paused(t, s, queue) {
			t.Fatalf("%s: the refused call paused the queue", label)
		}
	}
	setHeaders(map[string]string{"Authorization": "Bearer " + token})
	res := callTool(t, c, "pgbus_queue_pause", map[string]any{"queue": queue})
	if res.IsError || !paused(t, s, queue) {
		t.Fatalf("pause with the right token: %s; paused %v", resultText(res), paused(t, s, queue))
	}
}

// Binding to anything but loopback needs a token; the check names the fix.
func TestNonLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":8080", "[::]:0", "192.0.2.10:8080", "example.com:80"} {
		err := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr}.Check()
		if err == nil || !strings.Contains(err.Error(), "--auth-token") || !strings.Contains(err.Error(), "PGBUS_MCP_TOKEN") {
			t.Errorf("addr %s without token: %v; want an error naming --auth-token and PGBUS_MCP_TOKEN", addr, err)
		}
		if err := (mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr, AuthToken: longToken}).Check(); err != nil {
			t.Errorf("addr %s with token: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:9000", "127.0.0.2:1"} {
		if err := (mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr}).Check(); err != nil {
			t.Errorf("loopback addr %s: %v", addr, err)
		}
	}
	if err := (mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AllowedOrigins: []string{"evil"}}).Check(); err == nil {
		t.Error("an origin without scheme was accepted")
	}
	// A port no listener can have is refused before anything starts.
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:no-such-service"} {
		err := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr}.Check()
		if err == nil || !strings.Contains(err.Error(), "has no port pgbus can listen on: give one from 1 to 65535") {
			t.Errorf("addr %s: %v; want it refused for its port", addr, err)
		}
	}
}

// longToken is long enough to bind beyond loopback.
const longToken = "4f9c2e7a1b8d3f6e0a5c9b2d7e1f4a8c"

// A token no client can send (white space, or nothing but it) is refused
// wherever the server binds; beyond loopback a token must also be long.
func TestTokenCheck(t *testing.T) {
	t.Parallel()
	check := func(addr, token string) error {
		return mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: addr, AuthToken: token}.Check()
	}
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:8080"} {
		for _, token := range []string{"   ", "\t", " \n ", "two words", "tok-123 ", " " + longToken, longToken[:16] + "\t" + longToken[16:]} {
			if err := check(addr, token); err == nil || !strings.Contains(err.Error(), "white space") || !strings.Contains(err.Error(), "--auth-token") || !strings.Contains(err.Error(), "PGBUS_MCP_TOKEN_FILE") {
				t.Errorf("addr %s, token %q: %v; want a refusal naming --auth-token, PGBUS_MCP_TOKEN_FILE and the white space", addr, token, err)
			}
		}
	}
	for _, addr := range []string{"0.0.0.0:0", ":8080", "[::]:0", "192.0.2.10:8080", "example.com:80"} {
		for _, token := range []string{"a", "tok-123", longToken[:31]} {
			err := check(addr, token)
			if err == nil || !strings.Contains(err.Error(), "at least 32 characters") || !strings.Contains(err.Error(), "openssl rand -hex 32") || !strings.Contains(err.Error(), "PGBUS_MCP_TOKEN_FILE") {
				t.Errorf("addr %s, token of %d characters: %v; want a refusal asking for at least 32 characters", addr, len(token), err)
			}
		}
		if err := check(addr, longToken); err != nil {
			t.Errorf("addr %s, token of 32 characters: %v", addr, err)
		}
	}
	// Loopback binds keep short tokens, as tests and local setups use.
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:9000"} {
		for _, token := range []string{"", "a", "tok-123"} {
			if err := check(addr, token); err != nil {
				t.Errorf("loopback addr %s, token %q: %v", addr, token, err)
			}
		}
	}
}

// Which Host headers a server accepts, by what it is bound to.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	check := func(cfg mcpserver.HTTPConfig, listen string, host string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://x/mcp", bytes.NewReader(nil))
		req.Host = host
		return gateStatus(t, cfg, listen, req)
	}
	loop := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: "127.0.0.1:8080"}
	for host, want := range map[string]int{
		"127.0.0.1:8080": 204, "localhost:8080": 204, "[::1]:8080": 204, "LOCALHOST:8080": 204,
		"127.0.0.1:8081": 403, "evil.example:8080": 403, "evil.example": 403, "": 403, "10.0.0.1:8080": 403,
	} {
		if got := check(loop, "127.0.0.1:8080", host); got != want {
			t.Errorf("bound to loopback, Host %q: %d, want %d", host, got, want)
		}
	}
	named := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: "192.0.2.10:8080", AuthToken: longToken, AllowedHosts: []string{"mcp.example.com", "proxy.example.com:443"}}
	for host, want := range map[string]int{
		"192.0.2.10:8080": 204, "localhost:8080": 204, "mcp.example.com": 204, "mcp.example.com:9999": 204,
		"proxy.example.com:443": 204, "proxy.example.com:444": 403, "evil.example:8080": 403, "192.0.2.11:8080": 403,
	} {
		if got := check(named, "192.0.2.10:8080", host); got != want {
			t.Errorf("bound to 192.0.2.10, Host %q: %d, want %d", host, got, want)
		}
	}
}

// A refused request's log names the client a trusted proxy forwards for
// next to the proxy's address; without the proxy trusted, the client is
// the proxy, whatever X-Forwarded-For says.
func TestRefusalLogNamesTheClientBehindAProxy(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		var logs pgtest.SyncBuffer
		cfg := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
		if trusted {
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		}
		base := serveHTTP(t, deps(t, testStore(t)), cfg)
		for _, r := range []struct {
			header  http.Header
			session string
		}{
			{http.Header{"Origin": {"https://evil.example"}}, ""}, // the security gate
			{nil, "no-such-session"},                              // the session guard
		} {
			req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(initializeBody))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = r.header.Clone()
			if req.Header == nil {
				req.Header = http.Header{}
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("X-Forwarded-For", "198.51.100.9")
			if r.session != "" {
				req.Header.Set("Mcp-Session-Id", r.session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Fatalf("trusted %v, %v: %d; want a refusal", trusted, r, resp.StatusCode)
			}
		}
		want := map[bool]string{true: `"client":"198.51.100.9"`, false: `"client":"127.0.0.1"`}[trusted]
		if n := strings.Count(logs.String(), want); n != 2 {
			t.Fatalf("trusted %v: %d refusals logged with %s, want 2:\n%s", trusted, n, want, logs.String())
		}
	}
}

// A client that sends ten wrong bearer tokens within a minute has its
// further requests refused with 429 and Retry-After, the right token
// included, without their tokens being compared; another client (named by
// a trusted proxy) is not held back, and a client that sends the right
// token is never throttled, however many requests it makes at once. The
// refusals are logged, each status once a minute; no token is.
func TestWrongTokensAreThrottled(t *testing.T) {
	t.Parallel()
	const token = "correct-horse-battery-staple"
	var logs pgtest.SyncBuffer
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: token,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	from := func(client, auth string) (*http.Response, string) {
		headers := map[string]string{"X-Forwarded-For": client}
		if auth != "" {
			headers["Authorization"] = auth
		}
		return doRaw(t, base, rawReq{label: client, headers: headers})
	}
	// The right token, 64 requests at once: none counts.
	var wg sync.WaitGroup
	statuses := make([]int, 64)
	for i := range statuses {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(initializeBody))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("X-Forwarded-For", "198.51.100.1")
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				statuses[i] = resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	for i, code := range statuses {
		if code != 200 {
			t.Fatalf("the right token, request %d of 64 at once: %d", i+1, code)
		}
	}
	for i := range 10 {
		if resp, body := from("198.51.100.2", fmt.Sprintf("Bearer guess-%d", i)); resp.StatusCode != 401 {
			t.Fatalf("wrong token %d: %d %q; want 401", i+1, resp.StatusCode, body)
		}
	}
	for _, auth := range []string{"Bearer guess-10", "Bearer " + token} {
		resp, body := from("198.51.100.2", auth)
		retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != 429 || err != nil || retry < 1 || retry > 60 || !strings.Contains(body, "was not checked") || !strings.Contains(body, "try again in") {
			t.Fatalf("after ten wrong tokens, %q: %d, Retry-After %q, %q; want 429 within a minute, unchecked", auth[:12], resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	// No token at all is not a guess: it is told a token is needed.
	if resp, body := from("198.51.100.3", ""); resp.StatusCode != 401 || !strings.Contains(body, "required") {
		t.Fatalf("no token: %d %q; want 401", resp.StatusCode, body)
	}
	for _, client := range []string{"198.51.100.1", "198.51.100.4"} {
		if resp, body := from(client, "Bearer "+token); resp.StatusCode != 200 {
			t.Fatalf("client %s with the right token while 198.51.100.2 is throttled: %d %q", client, resp.StatusCode, body)
		}
	}
	// Each status once a minute, not a line per request: a scanner
	// does not fill the log. Its words survive the log's redaction.
	n429, n401 := strings.Count(logs.String(), `"status":429`), strings.Count(logs.String(), `"status":401`)
	if n429 != 1 || n401 != 1 || strings.Contains(logs.String(), "guess-") || strings.Contains(logs.String(), token) {
		t.Fatalf("%d refusals with 429 and %d with 401 logged, want one each, and no token:\n%s", n429, n401, logs.String())
	}
	if !strings.Contains(logs.String(), "10 requests with a wrong token came from this client") || strings.Contains(logs.String(), "REDACTED") {
		t.Errorf("the 429's reason does not read whole in the log:\n%s", logs.String())
	}
}

// A reverse proxy on the same machine forwards to the server over
// loopback with the Host its clients used: a name given with AllowedHosts
// is served over every transport, and one not given is refused by the
// server's own check, which names the flag that allows it.
func TestAllowedHostOverLoopback(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{mcpserver.TransportHTTP, mcpserver.TransportSSE} {
		base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: tr, AllowedHosts: []string{"mcp.example.com"}})
		path, method, body := mcpserver.PathMCP, http.MethodPost, initializeBody
		if tr == mcpserver.TransportSSE {
			path, method, body = mcpserver.PathSSE, http.MethodGet, ""
		}
		for host, want := range map[string]int{"mcp.example.com": http.StatusOK, "evil.example": http.StatusForbidden} {
			ctx, cancel := context.WithCancel(testContext(t))
			req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got := res.StatusCode
			text := ""
			if got != http.StatusOK {
				b, _ := io.ReadAll(res.Body)
				text = string(b)
			}
			_ = res.Body.Close()
			cancel()
			if got != want || (want == http.StatusForbidden && !strings.Contains(text, "--allowed-hosts")) {
				t.Errorf("%s over loopback with Host %q: %d %q; want %d", tr, host, got, text, want)
			}
		}
	}
}
