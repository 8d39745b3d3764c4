package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/basepath"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
)

// Transports of pgbus serve.
const (
	// TransportStdio is newline-delimited JSON-RPC on stdin and stdout.
	TransportStdio = ops.TransportStdio
	// TransportHTTP is Streamable HTTP at PathMCP.
	TransportHTTP = ops.TransportHTTP
	// TransportSSE is the legacy HTTP+SSE transport: a GET on PathSSE opens
	// the event stream, and messages are POSTed to PathMessage.
	TransportSSE = ops.TransportSSE
)

// Endpoints of the HTTP transports.
const (
	PathMCP     = "/mcp"
	PathSSE     = "/sse"
	PathMessage = "/message"
	// PathMetrics, PathLivez and PathReadyz are served when HTTPConfig
	// sets Metrics and Probes.
	PathMetrics = "/metrics"
	PathLivez   = "/livez"
	PathReadyz  = "/readyz"
)

// Defaults of HTTPConfig.
const (
	// DefaultAddr binds to loopback only: nothing off this machine can
	// connect unless the operator chooses another address.
	DefaultAddr = "127.0.0.1:8080"
	// DefaultMaxBodyBytes bounds one HTTP request body.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxSessions bounds the sessions open at once: those of
	// Streamable HTTP, or the event streams of the SSE transport.
	DefaultMaxSessions = 1000
	// MaxMaxSessions is the largest MaxSessions may be: each session keeps
	// some memory until it ends or SessionIdleTimeout passes idle.
	MaxMaxSessions = 100_000
	// DefaultSessionIdleTimeout ends a Streamable HTTP session after an
	// hour without a request, so that clients that never DELETE do not
	// pile up.
	DefaultSessionIdleTimeout = time.Hour
	// MinSessionIdleTimeout is the shortest SessionIdleTimeout may be.
	MinSessionIdleTimeout = time.Second
	// DefaultBodyReadTimeout bounds the time a client has to send a
	// request body once its headers are in.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds one write to a client of the MCP
	// endpoints, an event of a stream included: a client that does not
	// read for that long is taken as gone, and its connection is closed,
	// which ends its event stream and, over SSE, its session.
	DefaultWriteTimeout = time.Minute
	// shutdownTimeout bounds the graceful part of a shutdown: requests
	// still running after it are cut.
	shutdownTimeout = 10 * time.Second
	// MinRemoteTokenLen is the shortest bearer token accepted when Addr is
	// not loopback.
	MinRemoteTokenLen = 32
)

// HTTPConfig configures the HTTP transports.
type HTTPConfig struct {
	// Transport is TransportHTTP or TransportSSE.
	Transport string
	// Addr is the host:port to listen on; DefaultAddr when empty.
	Addr string
	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the server; "*" allows any. Loopback origins
	// (http://localhost:*, http://127.0.0.1:*, http://[::1]:*) are allowed
	// too when Addr is a loopback address. Requests without an Origin
	// header (every non-browser client) are not affected.
	AllowedOrigins []string
	// AllowedHosts are extra Host header values accepted, as host (any
	// port) or host:port: the name a reverse proxy or remote client uses.
	AllowedHosts []string
	// AuthToken, when set, must come with every request as
	// "Authorization: Bearer <token>". It may not contain white space.
	// Required when Addr is not loopback, and then at least
	// MinRemoteTokenLen characters long.
	AuthToken string
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes when zero.
	MaxBodyBytes int64
	// MaxSessions bounds the sessions open at once, so that clients that
	// open sessions and never end them cannot grow the server without
	// bound. A Streamable HTTP session ends by DELETE or SessionIdleTimeout
	// idle, and
	// a new one beyond the bound ends the session idle the longest that
	// has no event stream open and no request under way, or is refused
	// with 503 when there is none. A session of the SSE transport is its
	// event stream (GET PathSSE), and ends when the stream closes: one
	// beyond the bound is refused with 503 until one closes.
	// DefaultMaxSessions when zero.
	MaxSessions int
	// SessionIdleTimeout ends a Streamable HTTP session after that long
	// without a request; mcp-go looks for such sessions every half of it,
	// so one lasts up to one and a half times it. At least
	// MinSessionIdleTimeout; DefaultSessionIdleTimeout when zero.
	SessionIdleTimeout time.Duration
	// TrustedProxies are the reverse proxies in front of the server: a
	// refused request's log names the client they say they forward for
	// (X-Forwarded-For) next to the proxy's address.
	TrustedProxies []netip.Prefix
	// Logger receives refused requests and transport errors.
	Logger *slog.Logger
	// Dashboard, when set with TransportHTTP, serves every path the
	// endpoints do not, behind the same Host, Origin and body checks; it
	// authenticates its requests itself (a browser cannot send a bearer
	// token), and is told the caller as the endpoints are.
	Dashboard http.Handler
	// Ready, when set, is called once the server listens, with the address
	// it listens on (useful with port 0).
	Ready func(addr net.Addr)
	// Metrics, when set, is served at PathMetrics behind every check the
	// MCP endpoint has, the bearer token included: a scraper sends it as
	// a bearer token too.
	Metrics http.Handler
	// Probes, when set, answers PathLivez and PathReadyz behind the Host
	// and Origin checks but without the bearer token, so that a probe
	// needs no secret; they tell only whether the process and the
	// database are up and why not. ServeDashboard serves them too, beside
	// the dashboard alone.
	Probes http.Handler
	// Watch, when set, is given, once the transport is built, what reads
	// the MCP sessions and event streams it holds open, for the metrics
	// (metrics.Metrics.WatchMCP): Streamable HTTP's sessions initialized
	// and not ended, and its GET streams and subscriptions/listen
	// requests under way; the SSE transport's event streams, each a
	// session.
	Watch func(transport string, open func() metrics.MCPOpen)
	// BasePath is the path prefix everything is served under behind a
	// reverse proxy that forwards requests unchanged (--base-path), such
	// as "/pgbus": the MCP endpoint at BasePath+PathMCP, metrics and
	// probes at BasePath+PathMetrics and so on, the Dashboard (which must
	// be given the same base path) at BasePath+"/". Any other path is
	// answered 404 before any other check. Empty, everything is at /. Only
	// TransportHTTP takes one; Check refuses one that is not a clean URL
	// path: at most 200 bytes, starting with /, without ? or #, empty, .
	// or .. segments, of a URL path's characters only.
	BasePath string

	// bodyReadTimeout bounds the time to receive a request body;
	// DefaultBodyReadTimeout when zero. Tests shorten it.
	bodyReadTimeout time.Duration
	// sessionIdleTTL ends a Streamable HTTP session idle for that long;
	// SessionIdleTimeout when zero. Tests shorten it below
	// MinSessionIdleTimeout.
	sessionIdleTTL time.Duration
	// writeTimeout ends the connection of a response to the MCP endpoints
	// when one write to it makes no progress for that long;
	// DefaultWriteTimeout when zero. Tests shorten it.
	writeTimeout time.Duration
	// command is the command the server runs as, whose flags the
	// refusals of a Host or an Origin name: commandServe, or
	// commandDashboard for ServeDashboard.
	command string
}

// The commands a server runs as, for the advice of its refusals.
const (
	commandServe     = "pgbus serve"
	commandDashboard = "pgbus dashboard"
)

func (c HTTPConfig) withDefaults() HTTPConfig {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.bodyReadTimeout <= 0 {
		c.bodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.SessionIdleTimeout <= 0 {
		c.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if c.sessionIdleTTL <= 0 {
		c.sessionIdleTTL = c.SessionIdleTimeout
	}
	if c.writeTimeout <= 0 {
		c.writeTimeout = DefaultWriteTimeout
	}
	if c.command == "" {
		c.command = commandServe
	}
	return c
}

// Check validates the configuration before anything starts: a known
// transport, an address of the form host:port, a bearer token without
// white space, and whenever the address is not loopback, a token of at
// least MinRemoteTokenLen characters.
func (c HTTPConfig) Check() error {
	c = c.withDefaults()
	if c.Transport != TransportHTTP && c.Transport != TransportSSE {
		return fmt.Errorf("transport %q is not an HTTP transport: use %s or %s", c.Transport, TransportHTTP, TransportSSE)
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("--addr %q is not host:port (for example %s): %v", c.Addr, DefaultAddr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--addr %q has no port pgbus can listen on: give one from 1 to 65535 (or 0 for any free one), for example %s", c.Addr, DefaultAddr)
	}
	if c.AuthToken != "" && strings.TrimSpace(c.AuthToken) == "" {
		return errors.New("the token (--auth-token, PGBUS_MCP_TOKEN, or the file PGBUS_MCP_TOKEN_FILE names) is only white space, which no client can send: use a random token, e.g. the output of `openssl rand -hex 32`")
	}
	if strings.IndexFunc(c.AuthToken, unicode.IsSpace) >= 0 {
		return errors.New("the token (--auth-token, PGBUS_MCP_TOKEN, or the file PGBUS_MCP_TOKEN_FILE names) contains white space, which no client can send in a bearer token; use a random token, e.g. the output of `openssl rand -hex 32`")
	}
	if !IsLoopbackHost(host) {
		where := host
		if where == "" {
			where = "every interface"
		}
		if c.AuthToken == "" {
			return fmt.Errorf("--addr %s listens on %s, not only on loopback, so a bearer token is required: pass --auth-token, or set PGBUS_MCP_TOKEN or PGBUS_MCP_TOKEN_FILE (a file that holds it), to a random token (for example the output of `openssl rand -hex 32`), or bind to 127.0.0.1", c.Addr, where)
		}
		if n := utf8.RuneCountInString(c.AuthToken); n < MinRemoteTokenLen {
			return fmt.Errorf("the token (--auth-token, PGBUS_MCP_TOKEN, or the file PGBUS_MCP_TOKEN_FILE names) has %s, too few for --addr %s, which listens on %s, not only on loopback: use a random token of at least %d characters, e.g. openssl rand -hex 32", plural.Count(n, "character", "characters"), c.Addr, where, MinRemoteTokenLen)
		}
	}
	if c.MaxSessions > MaxMaxSessions {
		return fmt.Errorf("--max-sessions %d is more than %d: each open session keeps memory until it ends or --session-idle-timeout passes idle; use %d or less", c.MaxSessions, MaxMaxSessions, MaxMaxSessions)
	}
	if c.SessionIdleTimeout < MinSessionIdleTimeout {
		return fmt.Errorf("--session-idle-timeout %s: give %s or more", c.SessionIdleTimeout, MinSessionIdleTimeout)
	}
	for _, o := range c.AllowedOrigins {
		if o != "*" && normalizeOrigin(o) == "" {
			return fmt.Errorf("--allowed-origins: %q is not an origin; give scheme://host[:port], for example https://app.example.com, or *", o)
		}
	}
	if err := CheckBasePath(c.Transport, c.BasePath); err != nil {
		return fmt.Errorf("--base-path: %w", err)
	}
	return nil
}

// CheckBasePath checks a base path (HTTPConfig.BasePath) for transport:
// a clean URL path (see BasePath), and none but with TransportHTTP,
// whose endpoints are the only ones served under one.
func CheckBasePath(transport, p string) error {
	base, err := basepath.Clean(p)
	if err != nil {
		return err
	}
	if base != "" && transport != TransportHTTP {
		where := "its endpoints stay at " + PathSSE + " and " + PathMessage
		if transport == TransportStdio {
			where = "it serves no HTTP at all"
		}
		return fmt.Errorf("%s: only --transport %s serves under a base path, and the %s transport does not (%s); drop the base path or use --transport %s", base, TransportHTTP, transport, where, TransportHTTP)
	}
	return nil
}

// IsLoopbackHost reports whether host (a name or IP, without port) is
// "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler returns the HTTP handler of cfg.Transport for s, behind the
// security checks of a server listening on listenAddr (nil: cfg.Addr, for
// a service that listens itself on a port it names), and a function that
// ends the transport's open sessions and streams (call it before shutting
// the http.Server down, so that it need not wait for them).
func Handler(s *server.MCPServer, cfg HTTPConfig, listenAddr net.Addr) (http.Handler, func(context.Context), error) {
	if err := refuseNil("Handler", needServer(s)); err != nil {
		return nil, nil, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.Check(); err != nil {
		return nil, nil, err
	}
	sec, err := NewSecurity(cfg, listenAddr)
	if err != nil {
		return nil, nil, err
	}
	base, _ := basepath.Clean(cfg.BasePath) // Check accepted it
	sec.calls = map[string]bool{base + PathMCP: true, PathMessage: true}
	sec.largeCall = vocab.WithFlags(vocab.Command(ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"ids": "ID", "payload": "@payload.json"}}), flagsOf(s))
	mux := http.NewServeMux()
	var closeSessions func(context.Context)
	var open func() metrics.MCPOpen
	switch cfg.Transport {
	case TransportHTTP:
		h, closeAll, ids := streamableHandler(s, cfg)
		mux.Handle(base+PathMCP, writeDeadlines(h, cfg.writeTimeout))
		closeSessions, open = closeAll, ids.openNow
	case TransportSSE:
		streams := newSSEStreams()
		opts := []server.SSEOption{
			server.WithSSEEndpoint(PathSSE),
			server.WithSessionIDGenerator(streams.generate),
			server.WithSSEContextFunc(streams.callContext),
			server.WithMessageEndpoint(PathMessage),
			server.WithKeepAliveInterval(30 * time.Second),
			server.WithSSEDisableLocalhostProtection(true), // the security gate checks Host, as for TransportHTTP
		}
		cors := corsOrigins(cfg.AllowedOrigins)
		if len(cors) > 0 {
			opts = append(opts, server.WithSSECORS(server.WithCORSAllowedOrigins(cors...)))
		}
		h := server.NewSSEServer(s, opts...)
		var stream http.Handler = h
		if len(cors) == 0 {
			stream = noAnyOrigin(h)
		}
		mux.Handle(PathSSE, writeDeadlines(boundStreams(streams.track(stream), cfg), cfg.writeTimeout))
		streams.watch(s)
		mux.Handle(PathMessage, writeDeadlines(checkJSONBodies(cfg.Logger, cfg.TrustedProxies, streams.messages(s, h, frontDoor{s: s, each: eachPOST}, cfg)), cfg.writeTimeout))
		closeSessions, open = func(context.Context) { h.CloseSessions() }, streams.openNow
	}
	if cfg.Watch != nil {
		cfg.Watch(cfg.Transport, open)
	}
	// The metrics and probes handlers are those of --metrics-addr too,
	// which serves them at /: they are given the paths they know.
	if cfg.Metrics != nil {
		mux.Handle(base+PathMetrics, http.StripPrefix(base, cfg.Metrics))
	}
	if cfg.Probes != nil {
		sec.handleProbes(mux, base, cfg.Probes)
	}
	endpoint := base + PathMCP
	if cfg.Transport == TransportSSE {
		endpoint = PathSSE
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("pgbus MCP server: no endpoint %s here; connect your MCP client to %s", r.URL.Path, endpoint), http.StatusNotFound)
	})
	who := ops.Caller{Transport: cfg.Transport, Principal: sec.Principal()}
	if cfg.Dashboard != nil && cfg.Transport == TransportHTTP {
		return underBase(base, sec.withDashboard(sec.Wrap(identify(mux, who)), mux, identify(cfg.Dashboard, who), base, loginCheck(cfg.Dashboard))), closeSessions, nil
	}
	return underBase(base, sec.Wrap(identify(mux, who))), closeSessions, nil
}

// handleProbes serves probes at base+PathLivez and base+PathReadyz of mux,
// and lets them through the bearer token's check: a load balancer or a
// Kubernetes probe carries no secret. The probes handler is that of
// --metrics-addr too, which serves it at /: it is given the paths it
// knows. With a token, /readyz answers its verdict without its reasons,
// whatever token a request sends: they name the queues, which the token
// keeps from everyone else, and an answer that changed with the token
// would let a client test guesses of it unthrottled.
func (s *Security) handleProbes(mux *http.ServeMux, base string, probes http.Handler) {
	mux.Handle(base+PathLivez, http.StripPrefix(base, probes))
	ready := http.StripPrefix(base, probes)
	if s.hasToken {
		ready = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.StripPrefix(base, probes).ServeHTTP(w, metrics.WithoutReasons(r))
		})
	}
	mux.Handle(base+PathReadyz, ready)
	s.open = map[string]bool{base + PathLivez: true, base + PathReadyz: true}
}

// underBase answers 404 to a request outside base, before any check: a
// reverse proxy sends only the paths under it, and nothing is served
// elsewhere. base itself goes on, for the dashboard to redirect it to
// base+"/".
func underBase(base string, next http.Handler) http.Handler {
	if base == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := basepath.Under(base, r.URL.Path); !ok && r.URL.Path != base {
			http.Error(w, fmt.Sprintf("pgbus: this server serves everything under %s/ (the MCP endpoint is %s%s), and has nothing at %s", base, base, PathMCP, r.URL.Path), http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// identify names, in the context of every request that passed the security
// checks, the transport and the authenticated principal, for the audit log;
// the tools add the client's declared name.
func identify(next http.Handler, who ops.Caller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(ops.WithCaller(r.Context(), who)))
	})
}

// corsOrigins are the origins mcp-go answers CORS preflights for: the
// configured ones (the loopback defaults have no fixed port to list).
func corsOrigins(allowed []string) []string {
	out := make([]string, 0, len(allowed))
	for _, o := range allowed {
		if o == "*" {
			out = append(out, o)
		} else if n := normalizeOrigin(o); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ServeHTTP listens on cfg.Addr and serves s over cfg.Transport until ctx
// is done, then shuts down gracefully: open sessions and streams are
// closed, running requests get a few seconds to finish.
func ServeHTTP(ctx context.Context, s *server.MCPServer, cfg HTTPConfig) error {
	if err := refuseNil("ServeHTTP", needContext(ctx), needServer(s)); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if err := cfg.Check(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %v; choose another --addr or stop what uses it", cfg.Addr, err) // %v: a listener refused is no database that does not answer
	}
	return Serve(ctx, s, ln, cfg)
}

// Serve is ServeHTTP on a listener the caller opened. It closes ln.
func Serve(ctx context.Context, s *server.MCPServer, ln net.Listener, cfg HTTPConfig) error {
	if err := refuseNil("Serve", needContext(ctx), needServer(s)); err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	cfg = cfg.withDefaults()
	handler, closeSessions, err := Handler(s, cfg, ln.Addr())
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := newHTTPServer(ctx, cfg, handler)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		closeSessions(context.Background())
		return fmt.Errorf("serve MCP over HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	closeSessions(shutdownCtx)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shut down the MCP HTTP server: %w", err)
		}
		cfg.Logger.Warn("MCP HTTP server: requests still running after the shutdown timeout were cut", "timeout", shutdownTimeout)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHTTPServer is the http.Server of every listener of this package.
// Long-lived event streams rule out ReadTimeout and WriteTimeout:
// ReadTimeout would also end a stream when net/http's watch for the client
// going away hits it. The security middleware bounds the time to receive a
// body instead, per request, and writeDeadlines each write to the MCP
// endpoints.
func newHTTPServer(ctx context.Context, cfg HTTPConfig, handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          quietlog.ServerLog(cfg.Logger, "the HTTP server at "+cfg.Addr),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// boundStreams passes on the event streams of the SSE transport (GET
// PathSSE), each a session, while fewer than cfg.MaxSessions are open, and
// refuses one more with 503 until one closes.
func boundStreams(next http.Handler, cfg HTTPConfig) http.Handler {
	var (
		mu   sync.Mutex
		open int
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		full := open >= cfg.MaxSessions
		if !full {
			open++
		}
		mu.Unlock()
		if full {
			refuseFull(cfg.Logger, cfg.TrustedProxies, w, r, cfg.MaxSessions, time.Minute,
				"close event streams no longer used (each "+PathSSE+" stream is a session, ended when the client disconnects), then connect again")
			return
		}
		defer func() {
			mu.Lock()
			open--
			mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// noAnyOrigin passes on the event streams of the SSE transport without the
// Access-Control-Allow-Origin: * that mcp-go gives them when it is told of
// no allowed origins: that tells browsers any origin may read the stream,
// which the security gate refuses to foreign origins.
func noAnyOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&noAnyOriginWriter{ResponseWriter: w}, r)
	})
}

// noAnyOriginWriter drops Access-Control-Allow-Origin: * from the headers
// of the response before they are written.
type noAnyOriginWriter struct {
	http.ResponseWriter
	written bool
}

func (w *noAnyOriginWriter) drop() {
	if !w.written {
		w.written = true
		if w.Header().Get("Access-Control-Allow-Origin") == "*" {
			w.Header().Del("Access-Control-Allow-Origin")
		}
	}
}

func (w *noAnyOriginWriter) WriteHeader(status int) {
	w.drop()
	w.ResponseWriter.WriteHeader(status)
}

func (w *noAnyOriginWriter) Write(p []byte) (int, error) {
	w.drop()
	return w.ResponseWriter.Write(p)
}

// Flush passes on the flushes of the event stream.
func (w *noAnyOriginWriter) Flush() {
	w.drop()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *noAnyOriginWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeDeadlines gives each write of next's responses, and each flush,
// timeout to make progress: a client that stops reading an event stream
// would otherwise hold its handler in a write for as long as its
// connection stays open, and with it the stream's session and what it
// holds. A write that times out closes the connection, which ends the
// request's context, and so the stream. The deadline is lifted after each
// write, for the idle time of a stream and the next request of the
// connection.
func writeDeadlines(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}, r)
	})
}

// deadlineWriter sets a write deadline around each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// arm sets the deadline of a write starting now, and returns how to lift
// it; a writer without deadlines (a test's recorder) gets none.
func (w *deadlineWriter) arm() func() {
	if w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) != nil {
		return func() {}
	}
	return func() { _ = w.rc.SetWriteDeadline(time.Time{}) }
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	defer w.arm()()
	return w.ResponseWriter.Write(p)
}

// Flush sends what was written to the client, within the deadline.
func (w *deadlineWriter) Flush() {
	defer w.arm()()
	_ = w.rc.Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
