package dashboard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// serverOpts are how a test's pgbus serve runs.
type serverOpts struct {
	token                   string
	readOnly, allowPayloads bool
	// basePath serves everything under it (pgbus serve --base-path).
	basePath string
	// logs, when set, receives the server's log.
	logs io.Writer
	// callTimeout bounds each page's database work; zero for the default.
	callTimeout time.Duration
	// maxBody bounds a request body; zero for the default.
	maxBody int64
	// trustedProxies are the reverse proxies in front of the server.
	trustedProxies []netip.Prefix
}

// serve runs pgbus serve --transport http over st, as the command does
// (runner.ServeMCP), on a free loopback port, until the test ends; it
// returns the server's address.
func serve(t *testing.T, st *store.Store, o serverOpts) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	logger := slog.New(slog.DiscardHandler)
	if o.logs != nil {
		logger = slog.New(slog.NewTextHandler(o.logs, nil))
	}
	go func() {
		done <- runner.ServeMCP(ctx, st, runner.MCPConfig{
			Transport: mcpserver.TransportHTTP,
			HTTP:      mcpserver.HTTPConfig{Addr: "127.0.0.1:0", AuthToken: o.token, BasePath: o.basePath, MaxBodyBytes: o.maxBody, Ready: func(a net.Addr) { ready <- a }},
			ReadOnly:  o.readOnly, AllowPayloads: o.allowPayloads, TrustedProxies: o.trustedProxies,
			Logger: logger, DatabaseCallTimeout: o.callTimeout,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pgbus serve ended with %v", err)
		}
	})
	select {
	case a := <-ready:
		return a.String()
	case err := <-done:
		t.Fatalf("pgbus serve did not start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("pgbus serve did not listen within a minute")
	}
	return ""
}

// newToken returns a random token of 40 hex digits.
func newToken(t *testing.T) string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// browser is an HTTP client with cookies that does not follow redirects,
// as a browser without JavaScript uses the dashboard.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	// prefix is the base path the server is served under, which base
	// ends with and the paths given to get and post leave out.
	prefix string
}

// browseQueue makes a queue of st named after name, and a browser of a
// dashboard serving st with the default options.
func browseQueue(t *testing.T, st *store.Store, name string) (string, *browser) {
	t.Helper()
	return pgtest.NewQueue(t, st, name), newBrowser(t, serve(t, st, serverOpts{}))
}

func newBrowser(t *testing.T, addr string) *browser { return newBrowserUnder(t, addr, "") }

// newBrowserUnder is newBrowser for a server under the base path prefix.
func newBrowserUnder(t *testing.T, addr, prefix string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A bound for a failure only: a bulk move of a thousand messages may
	// take over a minute on a busy machine.
	return &browser{t: t, base: "http://" + addr + prefix, prefix: prefix, c: &http.Client{Jar: jar, Timeout: 3 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get fetches a page, returning its status, body and redirect target.
func (b *browser) get(path string) (int, string, string) {
	b.t.Helper()
	return b.do(http.MethodGet, path, nil, nil)
}

// post sends a form.
func (b *browser) post(path string, form url.Values, header http.Header) (int, string, string) {
	b.t.Helper()
	return b.do(http.MethodPost, path, form, header)
}

func (b *browser) do(method, path string, form url.Values, header http.Header) (int, string, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		b.t.Fatal(err)
	}
	return resp.StatusCode, string(out), resp.Header.Get("Location")
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the first form of a page.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no form with a CSRF token:\n%s", page)
	}
	return m[1]
}

// login logs b in with token through the login page.
func (b *browser) login(token string) {
	b.t.Helper()
	code, page, _ := b.get("/login")
	if code != http.StatusOK {
		b.t.Fatalf("GET /login: %d\n%s", code, page)
	}
	code, page, to := b.post("/login", url.Values{"csrf": {csrf(b.t, page)}, "token": {token}, "next": {"/"}}, nil)
	if code != http.StatusSeeOther || to != b.prefix+"/" {
		b.t.Fatalf("POST /login with the token: %d to %q\n%s", code, to, page)
	}
}

// newService returns a service over st for the test's own checks.
func newService(t *testing.T, st *store.Store) *ops.Service {
	t.Helper()
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// deadCount is how many dead messages f selects.
func deadCount(t *testing.T, svc *ops.Service, f ops.DeadFilter) int64 {
	t.Helper()
	sum, err := svc.DLQSummary(pgtest.Context(t), ops.DLQSummaryRequest{Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	return sum.Total
}

// counted is a count of a health verdict, or -1 where the check could not
// read it (absent): a test comparing it fails rather than panics.
func counted[T int | int64](p *T) T {
	if p == nil {
		return -1
	}
	return *p
}
