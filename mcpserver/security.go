package mcpserver

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/clientaddr"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/internal/throttle"
)

// Security is the gate in front of the HTTP transports. It refuses, before
// the MCP server sees anything:
//
//   - a Host header that does not name this server (DNS rebinding): 403;
//   - an Origin header that is present and not allowed: 403;
//   - a missing or wrong bearer token, when a token is configured: 401 with
//     WWW-Authenticate: Bearer (but on the probe paths, /livez and /readyz);
//     on the dashboard's paths, where a browser logs in instead, a wrong
//     bearer token when one is sent;
//   - any token, unchecked, from a client that sent tokenMaxFailures wrong
//     ones within tokenWindow: 429 with Retry-After, until the oldest
//     leaves the window;
//   - a body over the size limit: 413 (anonymousMaxBody for a request
//     that is not authenticated, when a token is configured);
//   - a body that finds no room among those read at once: 503 with
//     Retry-After (requests that are not authenticated find theirs in a
//     share of the room, so that they cannot take all of it, and each
//     client of theirs in a share of that, so that one cannot take all
//     of theirs);
//   - a body that does not arrive within the body timeout: 408, and the
//     connection is closed.
type Security struct {
	port         string          // the port listened on
	hosts        map[string]bool // Host names accepted on port
	anyPortHosts map[string]bool // from AllowedHosts without a port
	hostPorts    map[string]bool // from AllowedHosts with a port
	loopback     bool            // bound to loopback only
	origins      []string        // normalized allowed origins
	anyOrigin    bool
	tokenSum     [sha256.Size]byte
	hasToken     bool
	maxBody      int64
	bodyTimeout  time.Duration
	bodies       bodyBudget
	log          *slog.Logger
	trusted      []netip.Prefix  // reverse proxies, for the client in logs
	command      string          // the command the server runs as, whose flags refusals name
	open         map[string]bool // paths that need no bearer token: the probes
	calls        map[string]bool // paths MCP messages are POSTed to
	// largeCall is the command that retries with a corrected payload from
	// a file, which a body over the cap sent to calls is told of.
	largeCall string
	guesses   *throttle.Limiter
	// refusals paces the log of refused requests, each status told once
	// a minute, so that a scanner or a client left with an old token does
	// not fill the log with a line per request.
	refusals quietlog.ByCode
	// forwarderTold is set once the log said that requests come through
	// a proxy not named as trusted.
	forwarderTold atomic.Bool
}

// Bearer token throttling: a client (an address, or the client a trusted
// proxy names) gets tokenMaxFailures wrong tokens within tokenWindow. A
// client that sends the right token loses nothing; a client behind the
// same address as one that guesses waits with it.
const (
	tokenMaxFailures = 10
	tokenWindow      = time.Minute
	tokenMaxClients  = 10_000
)

// NewSecurity returns the checks for a server configured by cfg and
// listening on listenAddr (the listener's address, so that port 0 is
// resolved); a nil listenAddr is cfg.Addr, whose port must then be given.
func NewSecurity(cfg HTTPConfig, listenAddr net.Addr) (*Security, error) {
	cfg = cfg.withDefaults()
	host, addrPort, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q is not host:port: %v", cfg.Addr, err)
	}
	port := addrPort
	if listenAddr != nil {
		if _, port, err = net.SplitHostPort(listenAddr.String()); err != nil {
			return nil, fmt.Errorf("listen address %q: %v", listenAddr, err)
		}
	} else if p, err := strconv.Atoi(addrPort); err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("no listen address was given and the address %q names no port: pass the listener's address (its Addr()), which says the port a port 0 was given", cfg.Addr)
	}
	s := &Security{
		port:         port,
		hosts:        map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true},
		anyPortHosts: map[string]bool{},
		hostPorts:    map[string]bool{},
		loopback:     IsLoopbackHost(host),
		maxBody:      cfg.MaxBodyBytes,
		bodyTimeout:  cfg.bodyReadTimeout,
		bodies:       newBodyBudget(bodiesAtOnce*cfg.MaxBodyBytes, min(cfg.MaxBodyBytes, anonymousMaxBody)),
		log:          cfg.Logger,
		trusted:      cfg.TrustedProxies,
		command:      cfg.command,
		guesses:      throttle.New(tokenMaxFailures, tokenWindow, tokenMaxClients),
	}
	if h := normalizeHost(host); h != "" && !isUnspecified(h) {
		s.hosts[h] = true
	}
	if host == "" || isUnspecified(normalizeHost(host)) {
		// Bound to every interface: the machine's own addresses name it.
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipnet, ok := a.(*net.IPNet); ok {
					s.hosts[normalizeHost(ipnet.IP.String())] = true
				}
			}
		}
	}
	for _, h := range cfg.AllowedHosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			s.hostPorts[net.JoinHostPort(normalizeHost(hh), pp)] = true
		} else {
			s.anyPortHosts[normalizeHost(h)] = true
		}
	}
	for _, o := range cfg.AllowedOrigins {
		switch n := normalizeOrigin(o); {
		case strings.TrimSpace(o) == "*":
			s.anyOrigin = true
		case n != "":
			s.origins = append(s.origins, n)
		}
	}
	if cfg.AuthToken != "" {
		s.tokenSum, s.hasToken = sha256.Sum256([]byte(cfg.AuthToken)), true
	}
	return s, nil
}

// Principal names who a request that passed the checks authenticated as:
// with a bearer token configured, "token sha256:" and the first 8 hex
// digits of the token's SHA-256 (enough to tell tokens apart in the audit
// log, too few to help guess one); "" without a token, when nobody
// authenticates.
func (s *Security) Principal() string {
	if !s.hasToken {
		return ""
	}
	return "token sha256:" + hex.EncodeToString(s.tokenSum[:4])
}

// Wrap returns next behind the checks.
func (s *Security) Wrap(next http.Handler) http.Handler { return s.wrap(next, true, nil) }

// wrap returns next behind the checks; the bearer token is checked only
// when bearer is set (a browser page authenticates on its own, and says
// through loggedIn, when not nil, whether a request is of a logged-in
// browser). With loggedIn, a bearer token a request sends is checked
// here all the same, before its body is read: a request is anonymous
// unless its token or its login was verified.
func (s *Security) wrap(next http.Handler, bearer bool, loggedIn func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.noteForwarder(r)
		if hasBody(r) {
			// Bounds the body's arrival, including what net/http drains
			// after a refusal below; readBody lifts it once the body is in.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout))
		}
		if !s.hostAllowed(r.Host) {
			s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("Host %q is not a name of this server; connect to the address it listens on (for example http://127.0.0.1:%s) or have the server allow it (%s --allowed-hosts)", r.Host, s.port, s.command))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) && (bearer || !sameOrigin(origin, r.Host)) {
			s.refuse(w, r, http.StatusForbidden, originRefusal(origin, s.command))
			return
		}
		anonymous := false
		if s.hasToken {
			switch {
			case bearer && !s.open[r.URL.Path]:
				if !s.authenticated(w, r) {
					return
				}
			case bearer:
				// A probe needs no token, and takes no body that counts.
				anonymous = true
			case loggedIn != nil && bearerSent(r):
				// A script's token on a page is checked here, before its
				// body is read, and a wrong one counted, as at /mcp: an
				// unchecked token would buy a stranger the room of a
				// logged-in request.
				if !s.authenticated(w, r) {
					return
				}
			case loggedIn != nil:
				// A page's form needs a login: the body of a request that
				// has none is refused once it came in, and a stranger's
				// bodies would hold the room of those that count.
				anonymous = !loggedIn(r)
			}
		}
		release, ok := s.readBody(w, r, anonymous)
		if !ok {
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// noteForwarder logs, once, that requests come through a reverse proxy
// not named as trusted: every client behind it has its address, so one
// client's wrong tokens, or slow bodies without a login, hold back all of
// them, the login form of a person included.
func (s *Security) noteForwarder(r *http.Request) {
	if s.forwarderTold.Load() {
		return
	}
	peer, ok := clientaddr.UntrustedForwarder(r, s.trusted)
	if ok && s.forwarderTold.CompareAndSwap(false, true) {
		s.log.Warn("pgbus: requests come through a reverse proxy that is not trusted (they carry X-Forwarded-For): every client behind it counts as one, so one client's wrong tokens or slow requests hold back all of them; name the proxy with --trusted-proxies (PGBUS_TRUSTED_PROXIES)",
			"proxy", peer)
	}
}

// readBody reads a request body into memory within the size and time
// bounds, so that an oversized body is refused with 413, and one that does
// not arrive in time with 408, before any of it is handled; an anonymous
// request (see wrap) may send anonymousMaxBody bytes at most, and one
// whose body finds no room in the budget is refused with 503. It reports
// whether the request may go on, and then release gives the body's room
// back once the request was handled. Anonymous bodies take their room
// from a share of the budget (anonymousShare), past which they get 503
// while authenticated requests still find theirs; and those of one client
// (throttle.ClientKey, as the throttle of wrong tokens counts it) from a
// share of that (bodyBudget.perClient), past which that client's get 503
// while other clients' still find theirs.
//
// The read deadline set by Wrap stays in place unless the whole body came
// in: net/http drains what is left of a body after the handler returns,
// and it must not wait for bytes that never come. Once the body is in, the
// deadline is lifted, since the connection's only read left is net/http's
// watch for the client going away, which must not end a long streamed
// answer; the next request on the connection gets the server's deadlines.
func (s *Security) readBody(w http.ResponseWriter, r *http.Request, anonymous bool) (release func(), ok bool) {
	limit := s.maxBody
	if anonymous {
		limit = min(limit, anonymousMaxBody)
	}
	if r.ContentLength > limit {
		s.refuseLarge(w, r, r.ContentLength, limit, anonymous)
		return nil, false
	}
	if !hasBody(r) {
		return func() {}, true
	}
	held := limit
	if r.ContentLength >= 0 {
		held = r.ContentLength
	}
	client := ""
	if anonymous {
		client = throttle.ClientKey(r, s.trusted)
	}
	if room := s.bodies.take(held, anonymous, client); room != roomTaken {
		w.Header().Set("Retry-After", "1")
		msg := fmt.Sprintf("the server holds as many request bodies as it reads at once (%s); send the request again in a moment", byteSize(bodiesAtOnce*s.maxBody))
		switch room {
		case roomAnonymousFull:
			msg = fmt.Sprintf("the server holds as many request bodies of requests that are not logged in as it reads at once (%s, the share of its room for bodies they may hold); log in, or send the request again in a moment", byteSize(bodiesAtOnce*s.maxBody/anonymousShare))
		case roomClientFull:
			msg = fmt.Sprintf("this client holds as many request bodies of requests that are not logged in as one client may hold at once (%s); log in, or send the request again in a moment, once this client's other requests were answered", byteSize(s.bodies.perClient))
		}
		s.refuse(w, r, http.StatusServiceUnavailable, msg)
		return nil, false
	}
	release = func() { s.bodies.give(held, anonymous, client) }
	body, err := io.ReadAll(io.LimitReader(r.Body, held+1))
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		release()
		s.refuse(w, r, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s of its headers; send the whole body at once", s.bodyTimeout))
		return nil, false
	case err != nil:
		release()
		s.refuse(w, r, http.StatusBadRequest, "could not read the request body: "+err.Error())
		return nil, false
	case int64(len(body)) > held:
		release()
		s.refuseLarge(w, r, -1, limit, anonymous)
		return nil, false
	}
	_ = r.Body.Close()
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return release, true
}

// refuseLarge refuses with 413 a request whose body of size bytes (-1:
// it did not say, and sent more) is over limit, unread. One sent to where
// MCP messages go (calls) is answered as a JSON-RPC error (id null, as
// the request's id is not read), which an MCP client hands its caller as
// the call's error rather than as a failure of its transport, and which
// says too what to do about the one call a person may need to make that
// large, a retry with a corrected payload: from a file, on the command
// line, as stdio's answer to a tool call of that payload says.
func (s *Security) refuseLarge(w http.ResponseWriter, r *http.Request, size, limit int64, anonymous bool) {
	msg := tooLarge(size, limit, anonymous)
	if !s.calls[r.URL.Path] || s.largeCall == "" {
		s.refuse(w, r, http.StatusRequestEntityTooLarge, msg)
		return
	}
	msg += "; nothing was done. A corrected payload larger than a tool call takes is retried from a file, payload.json, on the command line: ask an operator to run " + s.largeCall
	s.logRefusal(r, http.StatusRequestEntityTooLarge, msg)
	b, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(nil),
		Error: mcp.NewJSONRPCErrorDetails(mcp.INVALID_REQUEST, "pgbus: "+msg, nil)})
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write(append(b, '\n'))
}

// tooLarge says that a request body of size bytes (-1: it did not say,
// and sent more) is over limit.
func tooLarge(size, limit int64, anonymous bool) string {
	const todo = "send less in one request (fewer or shorter tool arguments, or a smaller form)"
	if anonymous {
		return fmt.Sprintf("request body is over %d bytes, as many as a request that is not logged in may send; log in, or %s", limit, todo)
	}
	if size < 0 {
		return fmt.Sprintf("request body is over %d bytes; %s", limit, todo)
	}
	return fmt.Sprintf("request body is %d bytes; at most %d are accepted: %s", size, limit, todo)
}

// Bounds of the request bodies held in memory: at most bodiesAtOnce
// bodies of the largest size accepted, together; when a token is set,
// anonymousMaxBody bytes for a request that is not authenticated (a
// dashboard request without a login, a probe), and of the room for all
// bodies, such requests hold one anonymousShare-th at most, so that
// strangers cannot take the room of authenticated requests; of that,
// the requests of one client hold one anonymousClientShare-th at most
// (but always room for one body of the largest size they may send), so
// that one stranger cannot take the room of the others, the login form
// of a person among them. Clients holding anonymous bodies are tracked
// while they hold one, anonymousMaxClients at most.
const (
	bodiesAtOnce         = 16
	anonymousMaxBody     = 64 << 10
	anonymousShare       = 4
	anonymousClientShare = 16
	anonymousMaxClients  = 10_000
)

// bodyBudget is the room left for request bodies in memory: a request
// takes its share before its body is read, and gives it back once it was
// handled, so that slow or large bodies sent at once cannot fill the
// memory. Bodies of anonymous requests take theirs from a pool of their
// own within it too, and each client's anonymous bodies from a share of
// that pool.
type bodyBudget struct {
	mu            sync.Mutex
	left          int64 // room left for any body
	anonymousLeft int64 // of it, room left for anonymous bodies
	// perClient is the room one client's anonymous bodies may hold.
	perClient int64
	// clients is the room each client holds with anonymous bodies: only
	// clients that hold some, anonymousMaxClients at most.
	clients map[string]int64
}

// newBodyBudget returns the room for size bytes of bodies, of which
// anonymous requests may hold size/anonymousShare, and those of one
// client one anonymousClientShare-th of that, but at least largest, the
// largest body an anonymous request may send.
func newBodyBudget(size, largest int64) bodyBudget {
	anonymous := size / anonymousShare
	return bodyBudget{left: size, anonymousLeft: anonymous,
		perClient: min(anonymous, max(anonymous/anonymousClientShare, largest)), clients: map[string]int64{}}
}

// room is what take found.
type room int

const (
	roomTaken         room = iota // the body's share was taken
	roomFull                      // no room is left for it
	roomAnonymousFull             // no room is left for anonymous bodies
	roomClientFull                // no room is left for the client's anonymous bodies
)

// take takes the room of a body of n bytes, an anonymous one of client.
func (b *bodyBudget) take(n int64, anonymous bool, client string) room {
	b.mu.Lock()
	defer b.mu.Unlock()
	if anonymous {
		holds, tracked := b.clients[client]
		switch {
		case n > b.perClient-holds:
			return roomClientFull
		case n > b.anonymousLeft, !tracked && len(b.clients) >= anonymousMaxClients:
			return roomAnonymousFull
		}
	}
	if n > b.left {
		return roomFull
	}
	b.left -= n
	if anonymous {
		b.anonymousLeft -= n
		b.clients[client] += n
	}
	return roomTaken
}

// give gives back the room take took, forgetting a client that holds
// none any more.
func (b *bodyBudget) give(n int64, anonymous bool, client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left += n
	if anonymous {
		b.anonymousLeft += n
		if b.clients[client] -= n; b.clients[client] <= 0 {
			delete(b.clients, client)
		}
	}
}

// byteSize words n bytes in the largest unit that holds it whole: 64 MB,
// 256 KB, 1000 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return plural.Count(n, "byte", "bytes")
}

// bearerSent reports whether r carries a bearer token: an Authorization
// header of scheme Bearer, as a script sends the dashboard.
func bearerSent(r *http.Request) bool {
	scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return ok && strings.EqualFold(scheme, "Bearer")
}

// hasBody reports whether r comes with a body to read, of any method.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody
}

func (s *Security) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.logRefusal(r, code, msg)
	w.Header().Set("Connection", "close")
	http.Error(w, "pgbus: "+msg, code)
}

// logRefusal tells the log of r, refused with code for msg, each code
// once a minute, with the count refused meanwhile.
func (s *Security) logRefusal(r *http.Request, code int, msg string) {
	if told, quiet := s.refusals.Due(code, time.Now()); told {
		s.log.Warn("pgbus: HTTP request refused", "status", code, "method", r.Method, "path", r.URL.Path,
			"remote", r.RemoteAddr, "client", clientaddr.Name(r, s.trusted), "host", r.Host, "origin", r.Header.Get("Origin"), "reason", msg,
			"refused_unlogged", quiet)
	}
}

// authenticated checks the request's bearer token, refusing the request
// with 401 when it is missing or wrong. A request that carries an
// Authorization header is an attempt of its client (throttle.Limiter): it
// is refused with 429, its token not compared, when the client's wrong
// tokens fill the window; the right token never counts.
func (s *Security) authenticated(w http.ResponseWriter, r *http.Request) bool {
	header := r.Header.Get("Authorization")
	ok, given := false, false
	if header != "" {
		var n int
		var wait time.Duration
		ok, n, wait = s.guesses.Attempt(throttle.ClientKey(r, s.trusted), time.Now, func() bool {
			var right bool
			right, given = s.tokenOK(header)
			return right
		})
		if wait > 0 {
			secs := int64((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			s.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("%s from this client within %s, so this one was not checked: try again in %s with the token this server was started with (--auth-token or PGBUS_MCP_TOKEN of pgbus serve or pgbus dashboard)", plural.Count(n, "request with a wrong token came", "requests with a wrong token came"), tokenWindow, plural.Count(secs, "second", "seconds")))
			return false
		}
	}
	if ok {
		return true
	}
	challenge := `Bearer realm="pgbus"`
	msg := "a bearer token is required: send it in the Authorization header, scheme Bearer: the token this server was started with (--auth-token or PGBUS_MCP_TOKEN of pgbus serve or pgbus dashboard)"
	if given {
		challenge += `, error="invalid_token"`
		msg = "the bearer token is wrong: send the token this server was started with (--auth-token or PGBUS_MCP_TOKEN of pgbus serve or pgbus dashboard)"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	s.refuse(w, r, http.StatusUnauthorized, msg)
	return false
}

// tokenOK checks an Authorization header in constant time (over digests,
// so that the token's length does not leak either). given tells whether a
// bearer token was sent at all.
func (s *Security) tokenOK(header string) (ok, given bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return false, header != ""
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return false, false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1, true
}

// hostAllowed checks the Host header against the names of this server.
func (s *Security) hostAllowed(hostHeader string) bool {
	host, port, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, port = hostHeader, "80"
	}
	host = normalizeHost(host)
	if host == "" {
		return false
	}
	if s.anyPortHosts[host] || s.hostPorts[net.JoinHostPort(host, port)] {
		return true
	}
	return port == s.port && s.hosts[host]
}

// originAllowed checks a browser Origin header.
func (s *Security) originAllowed(origin string) bool {
	if s.anyOrigin {
		return true
	}
	n := normalizeOrigin(origin)
	if n == "" {
		return false // "null", or not an origin at all
	}
	if slices.Contains(s.origins, n) {
		return true
	}
	if s.loopback {
		u, _ := url.Parse(n)
		return (u.Scheme == "http" || u.Scheme == "https") && IsLoopbackHost(u.Hostname())
	}
	return false
}

// normalizeOrigin returns scheme://host[:port] in lower case, or "" when o
// is not an origin.
func normalizeOrigin(o string) string {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// normalizeHost lower-cases a host name or IP and writes IPs canonically,
// without brackets.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(strings.TrimSpace(h), "[]"), "."))
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

func isUnspecified(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

// originRefusal says why a browser origin is refused by a server that
// runs as command (pgbus serve, pgbus dashboard). The null origin
// (sandboxed frames, file: pages, some redirects) is shared by every such
// page, so allowing it would let any of them call the server: it gets no
// --allowed-origins advice.
func originRefusal(origin, command string) string {
	if origin == "null" {
		return `Origin "null" (a sandboxed frame, a file: page or a redirect) is not allowed, and should not be: any page can send it; open the dashboard from its own address instead`
	}
	return fmt.Sprintf("Origin %q is not allowed; to allow it, start the server as %s --allowed-origins %s", origin, command, origin)
}
