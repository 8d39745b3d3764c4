// Package dashboard is pgbus's web dashboard: server-rendered pages for the
// people who oversee the queues and the agents working on them.
//
// It is a front end like the CLI and the MCP tools: every page parses its
// query into one request of package ops, calls the operation and renders
// its result; every action is an operation too, recorded in the audit log
// with the client "dashboard". The pages work without JavaScript, and
// their assets are embedded in the binary; with it, small scripts of its
// own send each form once and update the overview's counts from /live
// (static/live.js), check a corrected payload as it is typed
// (static/editor.js), and refresh a page asked to refresh itself, but
// not while a form on it holds what the person has not sent
// (static/refresh.js).
//
// The handler does not check Host and Origin headers itself: it is meant
// to be mounted behind the checks of the MCP server's HTTP transport
// (mcpserver.HTTPConfig.Dashboard). It authenticates browsers with a
// session cookie obtained on its login page from the server's token, and
// checks a CSRF token on every form.
package dashboard

import (
	"crypto/rand"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/basepath"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/internal/throttle"
	"github.com/pgbus/pgbus/ops"
)

// Client is how the audit log names the calls made from the dashboard.
const Client = "dashboard"

//go:embed templates/*.html static/*
var assets embed.FS

// Config configures the dashboard.
type Config struct {
	// AuthToken, when set, is what the login page asks for: the server's
	// bearer token. Without one (a server bound to loopback that needs no
	// token) nobody logs in.
	AuthToken string
	// SecureCookies marks the session cookie Secure, so that a browser
	// sends it only over HTTPS. It always is on a TLS connection, and on a
	// request whose trusted proxy (TrustedProxies) says in
	// X-Forwarded-Proto that the browser used HTTPS; set it too when the
	// server is reached off loopback through a TLS proxy.
	SecureCookies bool
	// TrustedProxies are the addresses of the reverse proxies in front of
	// the server. A login attempt that comes through one counts against
	// the client the proxies name in X-Forwarded-For (the last address in
	// it that is not a trusted proxy), not against the proxy, so that one
	// client's wrong tokens do not lock out everyone behind it. Without
	// them the header is ignored: a client could write any address there.
	TrustedProxies []netip.Prefix
	// Logger receives refused requests and failed operations.
	Logger *slog.Logger
	// Now is the clock relative times count from (ages, logins); default
	// the service's (ops.Service.Now) for the ages of what the database
	// wrote, which it counts on the database server's clock, and
	// time.Now for logins.
	Now func() time.Time
	// MCP is the path of the MCP endpoint served beside the dashboard
	// (pgbus serve --transport http), which the page of a path the
	// dashboard does not have names. Empty, the dashboard is served alone
	// (pgbus dashboard), and it tells an MCP client that calls /mcp, the
	// path such clients are given, that there is no MCP endpoint here.
	// It is the path as a browser sees it, under BasePath.
	MCP string
	// BasePath is the path prefix the dashboard is served under behind a
	// reverse proxy that forwards requests unchanged (pgbus serve
	// --base-path), such as "/pgbus"; empty, it is served at /. The
	// handler then takes requests under it only: BasePath+"/" is the
	// overview, BasePath alone redirects there, and any other path is not
	// found. Every link, form, redirect and script address of its pages,
	// and its session cookie's Path, carry it. New refuses a value that is
	// not a clean URL path (at most 200 bytes, starting with /, without ?
	// or #, empty, . or .. segments, of a URL path's characters only); a
	// trailing slash is dropped.
	BasePath string
	// CommandFlags are the global flags the commands a page names for a
	// person to run carry, each as " --name value": those the server was
	// started with, such as " --config /etc/pgbus.yaml". Empty for none.
	CommandFlags string
}

// server is the dashboard's handler.
type server struct {
	svc *ops.Service
	cfg Config
	// ages is the clock the ages of what the database wrote count from.
	ages  func() time.Time
	log   *slog.Logger
	key   []byte // signs session cookies and CSRF tokens
	pages map[string]*page
	mux   *http.ServeMux
	base  string // Config.BasePath, cleaned: "" or "/name" without a trailing slash
	// logins throttles the guesses at the token of each client.
	logins *throttle.Limiter
	// ended are the sessions logged out before they expired.
	ended endedSessions
	// unavailable tells the log of the database's outage that every page
	// and live count meets once a minute, not at each.
	unavailable quietlog.Log
	// forbidden tells the log, as unavailable does, that the database
	// refuses the server's role a privilege a page needs.
	forbidden quietlog.Log
	// refusals paces the log of refused requests, each status told once a
	// minute with the count refused meanwhile: a scanner's 404s, or a
	// page left open after its login ended, would fill the log with a
	// line per request.
	refusals quietlog.ByCode
}

// Login throttling: the login form takes the server's token, so guessing
// it is bounded by how fast one client may try.
const (
	loginMaxFailures = 5
	loginWindow      = time.Minute
	// loginMaxClients bounds the memory of the throttle.
	loginMaxClients = 10_000
)

// New returns the dashboard over svc: the same service, views and
// redaction the MCP tools use. A read-only svc hides every action and
// refuses it. A nil svc is refused with an error wrapping ops.ErrInvalid.
func New(svc *ops.Service, cfg Config) (http.Handler, error) {
	if svc == nil {
		return nil, fmt.Errorf("%w: dashboard.New needs an ops.Service, the operations layer: make one with ops.New", ops.ErrInvalid)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ages := cfg.Now
	if cfg.Now == nil {
		cfg.Now, ages = time.Now, svc.Now
	}
	base, err := basepath.Clean(cfg.BasePath)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	s := &server{base: base, svc: svc, cfg: cfg, ages: ages, log: cfg.Logger, key: make([]byte, 32),
		logins: throttle.New(loginMaxFailures, loginWindow, loginMaxClients), ended: endedSessions{until: map[string]time.Time{}}}
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
	if s.pages, err = parsePages(base, cfg.CommandFlags); err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	m := http.NewServeMux()
	m.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(http.FileServerFS(static))))
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.authed(s.logout))
	m.HandleFunc("GET /{$}", s.authed(s.overview))
	m.HandleFunc("GET /live", s.authedJSON(s.live))
	m.HandleFunc("GET /dlq", s.authed(s.deadGroups))
	m.HandleFunc("GET /dlq/messages", s.authed(s.deadList))
	m.HandleFunc("GET /dlq/message", s.authed(s.deadMessage))
	m.HandleFunc("GET /dlq/retry", s.authed(s.bulkPreview("retry")))
	m.HandleFunc("POST /dlq/retry", s.authed(s.writes(s.bulk("retry"))))
	m.HandleFunc("GET /dlq/discard", s.authed(s.bulkPreview("discard")))
	m.HandleFunc("POST /dlq/discard", s.authed(s.writes(s.bulk("discard"))))
	m.HandleFunc("GET /dlq/selected", s.authed(s.selectedPreview))
	m.HandleFunc("POST /dlq/selected", s.authed(s.writes(s.selectedRun)))
	m.HandleFunc("GET /dlq/discarded", s.authed(s.discardedList))
	m.HandleFunc("GET /dlq/restore", s.authed(s.restorePreview))
	m.HandleFunc("POST /dlq/restore", s.authed(s.writes(s.restoreRun)))
	m.HandleFunc("POST /dlq/message/retry", s.authed(s.writes(s.retryOne)))
	m.HandleFunc("POST /dlq/message/discard", s.authed(s.writes(s.discardOne)))
	m.HandleFunc("POST /dlq/message/correct", s.authed(s.writes(s.correctPreview)))
	m.HandleFunc("POST /dlq/message/correct/retry", s.authed(s.writes(s.correctRun)))
	m.HandleFunc("GET /queues/{name}", s.authed(s.queuePage))
	m.HandleFunc("POST /queues/pause", s.authed(s.writes(s.pause)))
	m.HandleFunc("POST /queues/resume", s.authed(s.writes(s.resume)))
	m.HandleFunc("POST /queues/run-now", s.authed(s.writes(s.runNow)))
	m.HandleFunc("POST /circuits/reset", s.authed(s.writes(s.circuitReset)))
	m.HandleFunc("POST /circuits/open", s.authed(s.writes(s.circuitOpen)))
	m.HandleFunc("GET /audit", s.authed(s.audit))
	m.HandleFunc("GET /workers", s.authed(s.workers))
	m.HandleFunc("GET /circuits", s.authed(s.circuits))
	if cfg.MCP == "" {
		m.HandleFunc("/mcp", s.noMCP)
	}
	m.HandleFunc("/", s.authed(s.notFound))
	s.mux = m
	return s, nil
}

// ServeHTTP serves the dashboard with headers that keep its pages out of
// frames, caches and other sites' reach. Under a base path, its handlers
// see the paths below it ("/dlq" for BasePath+"/dlq").
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.base != "" {
		if r.URL.Path == s.base {
			to := s.base + "/"
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		if _, ok := basepath.Under(s.base, r.URL.Path); !ok {
			http.Error(w, fmt.Sprintf("pgbus: this server serves its dashboard under %s/, and has nothing at %s", s.base, r.URL.Path), http.StatusNotFound)
			return
		}
		r = basepath.Strip(r, s.base)
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-store")
	}
	s.mux.ServeHTTP(w, r)
}

// staticFiles serves the embedded assets with a cache lifetime, and no
// directory listing. A name that is not UTF-8 names none: the file server
// would answer it with a server error, since no file system can hold it.
func staticFiles(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A directory's listing is no asset.
		if !utf8.ValidString(r.URL.Path) || r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// writes refuses an action on a read-only server before it is parsed.
func (s *server) writes(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, v *view) {
		if s.svc.ReadOnly() {
			s.refuse(w, r, v, http.StatusForbidden, "This server is read-only: the dashboard shows everything but changes nothing. Run the action from the command line, or ask whoever runs the server for one that is not read-only.")
			return
		}
		next(w, r, v)
	}
}
