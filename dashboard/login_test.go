package dashboard_test

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// clock is a test's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// client logs in to a dashboard handler from one remote address.
type client struct {
	t      *testing.T
	h      http.Handler
	remote string
}

// loginWith sends the login form with token, from a fresh login page,
// and returns the response.
func (c client) loginWith(token string, header http.Header) *httptest.ResponseRecorder {
	c.t.Helper()
	page := httptest.NewRecorder()
	get := httptest.NewRequest(http.MethodGet, "/login", nil)
	get.RemoteAddr = c.remote
	c.h.ServeHTTP(page, get)
	if page.Code != http.StatusOK {
		c.t.Fatalf("GET /login from %s: %d\n%s", c.remote, page.Code, page.Body)
	}
	form := url.Values{"csrf": {csrf(c.t, page.Body.String())}, "token": {token}, "next": {"/"}}
	post := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		post.Header[k] = v
	}
	post.RemoteAddr = c.remote
	for _, ck := range page.Result().Cookies() {
		post.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, post)
	return rec
}

// Five wrong tokens from one address refuse its sixth attempt, even with
// the right token, with 429 and when to try again; another address, even
// one naming the first in X-Forwarded-For, is not refused; after the
// window the right token works again. The log names the failures, never
// the tokens tried.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	token := newToken(t)
	clk := &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	var logs pgtest.SyncBuffer
	h, err := dashboard.New(newService(t, st), dashboard.Config{AuthToken: token, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	attacker := client{t: t, h: h, remote: "192.0.2.10:40000"}
	const guess = "guess-not-the-token-"
	for i := range 5 {
		if rec := attacker.loginWith(guess+strconv.Itoa(i), nil); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d\n%s", i+1, rec.Code, rec.Body)
		}
		clk.add(time.Second)
	}
	rec := attacker.loginWith(token, nil)
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if rec.Code != http.StatusTooManyRequests || err != nil || retry != 55 {
		t.Fatalf("the right token after 5 wrong ones: %d, Retry-After %q (want 429, 55: the first failure leaves the minute 55 s from now)\n%s",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if body := rec.Body.String(); !strings.Contains(body, "Try again in 55 seconds (at 12:01:00 UTC)") || hasSession(rec) {
		t.Fatalf("the refusal does not say when to try again, or logs in:\n%s", body)
	}
	// A forged X-Forwarded-For does not make the attacker someone else.
	if rec := attacker.loginWith(token, http.Header{"X-Forwarded-For": {"198.51.100.99"}}); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("with a forged X-Forwarded-For: %d", rec.Code)
	}
	// Another address logs in.
	other := client{t: t, h: h, remote: "192.0.2.11:40000"}
	if rec := other.loginWith(token, nil); rec.Code != http.StatusSeeOther || !hasSession(rec) {
		t.Fatalf("another address with the right token: %d\n%s", rec.Code, rec.Body)
	}
	// A refused client's bearer token is not checked either.
	bearer := httptest.NewRequest(http.MethodGet, "/dlq", nil)
	bearer.RemoteAddr = attacker.remote
	bearer.Header.Set("Authorization", "Bearer "+token)
	brec := httptest.NewRecorder()
	h.ServeHTTP(brec, bearer)
	if brec.Code != http.StatusTooManyRequests || brec.Header().Get("Retry-After") == "" {
		t.Fatalf("the right bearer token of a refused address: %d", brec.Code)
	}

	// A second before the window ends, the wait is counted in the singular.
	clk.add(54 * time.Second)
	if rec := attacker.loginWith(token, nil); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "Try again in 1 second (at 12:01:00 UTC)") {
		t.Fatalf("the right token a second before the window ends: %d (want 429 saying to try again in 1 second)\n%s", rec.Code, rec.Body)
	}
	clk.add(time.Second)
	if rec := attacker.loginWith(token, nil); rec.Code != http.StatusSeeOther || !hasSession(rec) {
		t.Fatalf("the right token after the window: %d\n%s", rec.Code, rec.Body)
	}
	out := logs.String()
	if strings.Count(out, "login with a wrong token") != 5 || !strings.Contains(out, "too many wrong tokens") {
		t.Fatalf("the log does not record the 5 failures and the refusal:\n%s", out)
	}
	if strings.Contains(out, guess) || strings.Contains(out, token) {
		t.Fatalf("the log holds a token tried:\n%s", out)
	}
}

// hasSession reports whether a response sets a session cookie.
func hasSession(rec *httptest.ResponseRecorder) bool {
	for _, c := range rec.Result().Cookies() {
		if strings.HasPrefix(c.Name, "pgbus_session") && c.Value != "" {
			return true
		}
	}
	return false
}

// Behind a trusted reverse proxy, the throttle counts the client the proxy
// names: five wrong tokens lock out that client only, whatever it writes
// in X-Forwarded-For itself, while another client behind the same proxy
// logs in. Without the proxy trusted, everyone behind it is one client.
func TestLoginRateLimitBehindProxy(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	token := newToken(t)
	clk := &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	for _, trusted := range []bool{true, false} {
		cfg := dashboard.Config{AuthToken: token, Now: clk.Now}
		if trusted {
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		}
		h, err := dashboard.New(svc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		proxy := client{t: t, h: h, remote: "10.0.0.5:40000"}
		// The proxy appends the address it was called from.
		attacker := func(forged string) http.Header {
			return http.Header{"X-Forwarded-For": {strings.TrimPrefix(forged+", 198.51.100.7", ", ")}}
		}
		for i := range 5 {
			if rec := proxy.loginWith("wrong-token-"+strconv.Itoa(i), attacker("")); rec.Code != http.StatusUnauthorized {
				t.Fatalf("trusted %v: wrong token %d: %d", trusted, i+1, rec.Code)
			}
		}
		if rec := proxy.loginWith(token, attacker("203.0.113.1")); rec.Code != http.StatusTooManyRequests {
			t.Fatalf("trusted %v: the attacker with a forged entry of its own: %d, want 429", trusted, rec.Code)
		}
		rec := proxy.loginWith(token, http.Header{"X-Forwarded-For": {"198.51.100.8"}})
		if got, want := rec.Code, map[bool]int{true: http.StatusSeeOther, false: http.StatusTooManyRequests}[trusted]; got != want {
			t.Fatalf("trusted %v: another client behind the proxy: %d, want %d", trusted, got, want)
		}
	}
}

// A refused request is logged with its client as the trusted proxy names
// it, next to the proxy's own address, so that an operator can tell who
// was refused; without trusted proxies the client is the peer.
func TestRefusalLogNamesTheClientBehindAProxy(t *testing.T) {
	t.Parallel()
	svc := newService(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
	for _, trusted := range []bool{true, false} {
		var logs pgtest.SyncBuffer
		cfg := dashboard.Config{AuthToken: newToken(t), Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
		if trusted {
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		}
		h, err := dashboard.New(svc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/live", nil)
		req.RemoteAddr = "10.0.0.5:40000"
		req.Header.Set("X-Forwarded-For", "198.51.100.9")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := map[bool]string{true: `"client":"198.51.100.9"`, false: `"client":"10.0.0.5"`}[trusted]
		if rec.Code != http.StatusUnauthorized || !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), `"remote":"10.0.0.5:40000"`) {
			t.Fatalf("trusted %v: %d, log %s; want 401 logged with %s and the proxy as remote", trusted, rec.Code, logs.String(), want)
		}
	}
}

// A next page holding a tab or a line break is not followed after login: a
// browser drops those characters from a Location, so "/<tab>/evil.example"
// would take the person who logged in to another site.
func TestLoginNextWithControlCharactersStaysHere(t *testing.T) {
	t.Parallel()
	token := newToken(t)
	h, err := dashboard.New(newService(t, pgtest.OpenStore(t, pgtest.NewDatabase(t))), dashboard.Config{AuthToken: token})
	if err != nil {
		t.Fatal(err)
	}
	for _, next := range []string{"/\t/evil.example/", "/\n/evil.example/", "/\r/evil.example/", "/\t\\evil.example/"} {
		get := httptest.NewRequest(http.MethodGet, "/login?next="+url.QueryEscape(next), nil)
		page := httptest.NewRecorder()
		h.ServeHTTP(page, get)
		if strings.Contains(page.Body.String(), "evil.example") {
			t.Errorf("the login page keeps next %q in its form", next)
		}
		rec := postLogin(t, h, "/login", page, token, next)
		if to := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || to != "/" {
			t.Errorf("login with next %q: %d to %q, want / (a browser reads %q)", next, rec.Code, to, strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(to))
		}
	}
}

// Under a base path, a next page whose dot segments climb out of it is
// brought back under it: the Location is the base path and the resolved
// path, never another host's or a path outside the base.
func TestLoginNextStaysUnderTheBasePath(t *testing.T) {
	t.Parallel()
	token := newToken(t)
	h, err := dashboard.New(newService(t, pgtest.OpenStore(t, pgtest.NewDatabase(t))), dashboard.Config{AuthToken: token, BasePath: "/pgbus"})
	if err != nil {
		t.Fatal(err)
	}
	for next, want := range map[string]string{"/../\\evil.example/": "/pgbus/", "/..//x": "/pgbus/x", "/../../dlq": "/pgbus/dlq", "/dlq": "/pgbus/dlq"} {
		get := httptest.NewRequest(http.MethodGet, "/pgbus/login?next="+url.QueryEscape(next), nil)
		page := httptest.NewRecorder()
		h.ServeHTTP(page, get)
		if !strings.Contains(page.Body.String(), "<title>Log in · pgbus</title>") {
			t.Errorf("the login page's title is not Log in:\n%.600s", page.Body.String())
		}
		rec := postLogin(t, h, "/pgbus/login", page, token, next)
		if to := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || to != want {
			t.Errorf("login with next %q: %d to %q, want %q", next, rec.Code, to, want)
		}
	}
}

// postLogin sends h the login form of page, the login page at path, with
// token and next, as the browser that got the page would.
func postLogin(t *testing.T, h http.Handler, path string, page *httptest.ResponseRecorder, token, next string) *httptest.ResponseRecorder {
	t.Helper()
	form := url.Values{"csrf": {csrf(t, page.Body.String())}, "token": {token}, "next": {next}}
	post := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range page.Result().Cookies() {
		post.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, post)
	return rec
}

// A browser keeps a Secure cookie only over HTTPS: reached over plain HTTP,
// a server whose session cookie is Secure (it listens off loopback) gets
// its login form back without the cookie, every time. The refusal says so
// and how to reach the server, rather than only that the form expired.
func TestLoginOverPlainHTTPSaysTheCookieNeedsHTTPS(t *testing.T) {
	t.Parallel()
	svc := newService(t, pgtest.Store(t))
	for _, c := range []struct {
		secure, tls, want bool
	}{{true, false, true}, {true, true, false}, {false, false, false}} {
		h, err := dashboard.New(svc, dashboard.Config{AuthToken: "a-token", SecureCookies: c.secure})
		if err != nil {
			t.Fatal(err)
		}
		page := httptest.NewRecorder()
		h.ServeHTTP(page, httptest.NewRequest(http.MethodGet, "/login", nil))
		// The browser did not keep the cookie: the form comes back without it.
		form := url.Values{"csrf": {csrf(t, page.Body.String())}, "token": {"a-token"}, "next": {"/"}}
		post := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.tls {
			post.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, post)
		body := rec.Body.String()
		if rec.Code != http.StatusForbidden || !strings.Contains(body, "expired") {
			t.Fatalf("SecureCookies %v, TLS %v: a login without its cookie: %d\n%s", c.secure, c.tls, rec.Code, body)
		}
		if got := strings.Contains(body, "browsers keep only over HTTPS"); got != c.want {
			t.Errorf("SecureCookies %v, TLS %v: the refusal says the cookie needs HTTPS: %v, want %v\n%s", c.secure, c.tls, got, c.want, body)
		}
	}
}
