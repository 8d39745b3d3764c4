package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/clientaddr"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/metrics"
)

// sessionNotFound is the JSON-RPC error code of a request on a session that
// is not open, as other MCP servers answer it.
const sessionNotFound = -32001

// msgSessionNotOpen refuses a request naming a session that is not open.
const msgSessionNotOpen = "pgbus: this MCP session is not open: it was never issued by this server, was ended by DELETE, expired after being idle, was ended while idle to make room for a new session when the server held as many as it keeps, or the server restarted; start a new session by sending initialize without an Mcp-Session-Id header"

// msgBatches refuses a JSON-RPC batch, followed by how the transport takes
// requests one by one (eachPOST, eachLine).
const msgBatches = "pgbus: JSON-RPC batches are not taken (MCP dropped them in 2025-06-18): send each request "

// How the HTTP transports and stdio take requests one by one.
const (
	eachPOST = "in a POST of its own"
	eachLine = "on a line of its own"
)

// errSessionNotOpen is what Validate answers for an id that is not open.
var errSessionNotOpen = errors.New("session not open")

// sessions issues the session ids of the Streamable HTTP transport and
// knows which are open. mcp-go's default manager accepts any well-formed id,
// even one it never issued or one already ended; this one accepts only ids
// it issued and that no DELETE, idle expiry or shutdown has ended since.
// It implements mcp-go's server.SessionIdManager.
type sessions struct {
	mu   sync.Mutex
	open map[string]*openSession
	// pending counts requests that may start a session and have not yet:
	// with the open ones, they never pass max.
	pending int
	max     int
	// idleTTL is how long a session lasts without a request.
	idleTTL time.Duration
	log     *slog.Logger
	trusted []netip.Prefix // reverse proxies, for the client in logs
	// end ends a session no client can use, with everything mcp-go keeps
	// of it.
	end func(id string)
	// running are the POSTs under way in each open session, which its end
	// stops (sessionEnd).
	running map[string]map[*sessionEnd]struct{}
	// door answers the messages pgbus refuses before mcp-go serves them.
	door frontDoor
	// streams counts the event streams under way: GET requests of open
	// sessions, and subscriptions/listen requests of protocol 2026-07-28.
	streams atomic.Int64
	// endedForRoom tells the log of sessions ended to make room for new
	// ones at the first and then once a minute, with how many meanwhile:
	// a client that opens a session per request would make a line of
	// every request.
	endedForRoom quietlog.Log
	endedUntold  atomic.Int64
}

// openNow is what m holds open now: the sessions whose initialize was
// answered, and the event streams under way.
func (m *sessions) openNow() metrics.MCPOpen {
	m.mu.Lock()
	n := 0
	for _, s := range m.open {
		if !s.starting {
			n++
		}
	}
	m.mu.Unlock()
	return metrics.MCPOpen{Sessions: n, Streams: int(m.streams.Load())}
}

// streaming counts an event stream under way until the function it
// returns is called.
func (m *sessions) streaming() func() {
	m.streams.Add(1)
	return func() { m.streams.Add(-1) }
}

// openSession is what sessions knows of an open session, to choose the one
// to end when a new one needs its place (reserve).
type openSession struct {
	// used is when its last request started or ended.
	used time.Time
	// streams counts its event streams (GET) open.
	streams int
	// starting tells that its initialize is being answered.
	starting bool
}

func newSessions(cfg HTTPConfig) *sessions {
	return &sessions{open: map[string]*openSession{}, max: cfg.MaxSessions, idleTTL: cfg.sessionIdleTTL, log: cfg.Logger, trusted: cfg.TrustedProxies,
		running: map[string]map[*sessionEnd]struct{}{}}
}

// Generate issues a new session id: 32 bytes from crypto/rand, in hex, so
// that no one can guess an open session's id. The id is open at once, so
// that the client's next request finds it; an initialize that then fails
// ends it (startSession).
func (m *sessions) Generate() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails: crypto/rand aborts the program instead
	id := hex.EncodeToString(b)
	m.mu.Lock()
	m.open[id] = &openSession{used: time.Now(), starting: true}
	m.pending = max(m.pending-1, 0) // the reservation of its request
	m.mu.Unlock()
	return id
}

// started records that the initialize of session id was answered.
func (m *sessions) started(id string) {
	m.mu.Lock()
	if s := m.open[id]; s != nil {
		s.starting = false
		s.used = time.Now()
	}
	m.mu.Unlock()
}

// use records a request of session id starting or ending, and with
// streams +1 or -1 an event stream opening or closing.
func (m *sessions) use(id string, streams int) {
	m.mu.Lock()
	if s := m.open[id]; s != nil {
		s.used = time.Now()
		s.streams += streams
	}
	m.mu.Unlock()
}

// Validate accepts an open id and refuses any other with an error, which
// mcp-go answers with 404.
func (m *sessions) Validate(id string) (isTerminated bool, err error) {
	if !m.isOpen(id) {
		return false, errSessionNotOpen
	}
	return false, nil
}

// Terminate ends a session: its id is refused from now on. The tool
// calls under way in it are stopped, and answered before mcp-go lets go of
// the session's streams (it does right after), for at most
// stopCallsTimeout: a call waiting for the user's answer to an
// elicitation would otherwise wait for good, for an answer that can no
// longer come.
func (m *sessions) Terminate(id string) (isNotAllowed bool, err error) {
	m.mu.Lock()
	delete(m.open, id)
	running := m.running[id]
	delete(m.running, id)
	m.mu.Unlock()
	stopCalls(running)
	return false, nil
}

// closeAll ends every session, when the server shuts down.
func (m *sessions) closeAll() {
	m.mu.Lock()
	clear(m.open)
	running := m.running
	m.running = map[string]map[*sessionEnd]struct{}{}
	m.mu.Unlock()
	for _, r := range running {
		stopCalls(r)
	}
}

// stopCallsTimeout bounds the wait of a session's end for its calls to
// answer once stopped.
const stopCallsTimeout = 5 * time.Second

// stopCalls stops the requests of an ended session and waits for them to
// answer, for at most stopCallsTimeout.
func stopCalls(running map[*sessionEnd]struct{}) {
	if len(running) == 0 {
		return
	}
	for r := range running {
		close(r.ended)
	}
	timeout := time.NewTimer(stopCallsTimeout)
	defer timeout.Stop()
	for r := range running {
		select {
		case <-r.done:
		case <-timeout.C:
			return
		}
	}
}

// answered tells the POSTs under way in session id that the client
// answered question id.
func (m *sessions) answered(session, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := range m.running[session] {
		if r.answered(id) {
			return
		}
	}
}

// cancelled tells the POST under way in session whose request has
// JSON-RPC id request that its client cancelled it
// (notifications/cancelled): a call whose connection is gone learns it so.
func (m *sessions) cancelled(session, request string) {
	if request == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := range m.running[session] {
		if r.request == request {
			r.cancel()
		}
	}
}

// peekCancelled reads the id of the request a notifications/cancelled
// cancels, as sent, leaving the body in place; "" when it names none.
func peekCancelled(r *http.Request) string {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var msg struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return ""
	}
	return string(msg.Params.RequestID)
}

// track records a POST under way in session id, of JSON-RPC request id
// request ("" for no request) over the connection of conn, and returns
// what its tool calls watch (nil when the session is no longer open) and
// the function to call once it answered.
func (m *sessions) track(id, request string, conn context.Context) (*sessionEnd, func()) {
	r := &sessionEnd{ended: make(chan struct{}), done: make(chan struct{}), cancelled: make(chan struct{}), request: request, conn: conn}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.open[id]; !ok {
		return nil, func() {}
	}
	if m.running[id] == nil {
		m.running[id] = map[*sessionEnd]struct{}{}
	}
	m.running[id][r] = struct{}{}
	return r, func() {
		m.mu.Lock()
		if calls := m.running[id]; calls != nil {
			delete(calls, r)
			if len(calls) == 0 {
				delete(m.running, id)
			}
		}
		m.mu.Unlock()
		close(r.done)
	}
}

// reserve holds a place for the session a request may start. When as
// many sessions are open or being started as may be, it takes the place of
// the session idle the longest that can be ended (endable), which it
// returns, with how long it was idle, for the caller to end; when none
// can be, it reports false and how long until the first can, at the
// latest: once idle for the idle timeout. Requests that arrive at once
// are counted one by one, so the bound holds exactly.
func (m *sessions) reserve() (ok bool, ended string, idle, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.open)+m.pending < m.max {
		m.pending++
		return true, "", 0, 0
	}
	now := time.Now()
	var oldest *openSession
	var first time.Duration // until the first that is not starting idles out
	found := false
	for id, s := range m.open {
		if m.endable(id, s, now) {
			if oldest == nil || s.used.Before(oldest.used) {
				oldest, ended = s, id
			}
			continue
		}
		if left := s.used.Add(m.idleTTL).Sub(now); !s.starting && (!found || left < first) {
			first, found = left, true
		}
	}
	if oldest == nil {
		return false, "", 0, max(first, time.Second)
	}
	delete(m.open, ended) // its place is the new session's
	m.pending++
	return true, ended, now.Sub(oldest.used), 0
}

// endable reports whether session id, s, can be ended for a new one: it
// has no request under way and no initialize being answered, and has no
// event stream open or has been idle for the idle timeout, after which
// mcp-go's sweeper ends it anyway. The caller holds m.mu.
func (m *sessions) endable(id string, s *openSession, now time.Time) bool {
	return !s.starting && len(m.running[id]) == 0 && (s.streams == 0 || now.Sub(s.used) >= m.idleTTL)
}

// unreserve gives back the place of a request that started no session.
func (m *sessions) unreserve() {
	m.mu.Lock()
	m.pending = max(m.pending-1, 0)
	m.mu.Unlock()
}

// issuedKey keys, in the context of a request that may start a session,
// the *issued that records the id Generate issued for it.
type issuedKey struct{}

// issued is the id issued to one request, if any.
type issued struct{ id string }

// ResolveSessionIdManager gives mcp-go the manager of one request: for a
// request that may start a session, one whose Generate also records the id
// in the request, so that startSession knows which session the request
// started, even when its answer does not name it. It implements mcp-go's
// server.SessionIdManagerResolver; r is nil outside requests (the idle
// sweeper, shutdown).
func (m *sessions) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r != nil {
		if slot, ok := r.Context().Value(issuedKey{}).(*issued); ok {
			return issuing{sessions: m, slot: slot}
		}
	}
	return m
}

// issuing is the manager of a request that may start a session.
type issuing struct {
	*sessions
	slot *issued
}

// Generate issues an id and records it in the request.
func (i issuing) Generate() string {
	id := i.sessions.Generate()
	i.slot.id = id
	return id
}

func (m *sessions) isOpen(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.open[id]
	return ok
}

// guard answers, before mcp-go sees them, the requests that name a session
// that is not open (404: the client must initialize again) and the GET and
// DELETE requests that name none (400), which mcp-go would otherwise take
// as the start of a session of the client's own. Requests of protocol
// version 2026-07-28 and later have no sessions and are left to mcp-go,
// a session id they carry included.
func (m *sessions) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(server.HeaderKeySessionID)
		method, rawID, batch := peekMethod(r)
		hasID := len(rawID) > 0 && rawID != "null"
		modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
		// answered answers a POST pgbus refuses itself (frontDoor).
		answered := func() bool {
			if r.Method != http.MethodPost {
				return false
			}
			answer := m.door.answer(r.Context(), peekBody(r))
			if answer != nil {
				answerPOST(w, answer, modern)
			}
			return answer != nil
		}
		switch {
		case batch:
			m.refuse(w, r, http.StatusBadRequest, mcp.INVALID_REQUEST, msgBatches+eachPOST)
		case modern:
			// No session: mcp-go ignores a session id such a request
			// carries, and so does this guard.
			if !answered() {
				if r.Method == http.MethodPost && method == string(mcp.MethodSubscriptionsListen) && hasID {
					defer m.streaming()()
				}
				next.ServeHTTP(w, r)
			}
		case id == "" && r.Method == http.MethodPost && method != "" && method != string(mcp.MethodInitialize):
			m.refuse(w, r, http.StatusBadRequest, mcp.INVALID_REQUEST,
				"pgbus: "+clipMethod(method)+" needs the Mcp-Session-Id header the server returned on initialize; send initialize first "+
					"(a client of protocol 2026-07-28 or later sends no initialize: it names its version in the "+mcp.HeaderProtocolVersion+" header of every request)")
		case id != "" && !m.isOpen(id):
			m.refuse(w, r, http.StatusNotFound, sessionNotFound, msgSessionNotOpen)
		case r.Method == http.MethodPost && method == string(mcp.MethodInitialize) && !hasID:
			m.refuse(w, r, http.StatusBadRequest, mcp.INVALID_REQUEST,
				"pgbus: initialize is a request, not a notification: give it an id (a number or a string), and the answer carries the Mcp-Session-Id header of the new session")
		case answered():
			// An initialize answered so starts no session.
		case id == "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
			m.refuse(w, r, http.StatusBadRequest, mcp.INVALID_REQUEST,
				"pgbus: "+r.Method+" needs the Mcp-Session-Id header the server returned on initialize; send initialize first")
		case r.Method == http.MethodPost && (id == "" || method == string(mcp.MethodInitialize)):
			// An initialize on an open session starts another (mcp-go
			// issues it a new id): it takes a place as a first one does,
			// or --max-sessions would bound nothing.
			m.startSession(w, r, next)
		case id != "":
			// A session in use, or whose event stream is open, is not
			// ended for a new one (reserve).
			streams := 0
			if r.Method == http.MethodGet {
				streams = 1
				defer m.streaming()()
			}
			m.use(id, streams)
			defer m.use(id, -streams)
			if r.Method == http.MethodPost {
				if method == "" && hasID {
					m.answered(id, rawID) // the client's answer to a question
				}
				if method == string(mcp.MethodNotificationCancelled) {
					m.cancelled(id, peekCancelled(r))
				}
				request := ""
				if method != "" && hasID {
					request = rawID
				}
				end, answered := m.track(id, request, r.Context())
				defer answered()
				if end != nil {
					r = r.WithContext(context.WithValue(r.Context(), sessionEndKey{}, end))
					w = askWriter{ResponseWriter: &silencingWriter{ResponseWriter: w, end: end}, end: end}
				}
			}
			next.ServeHTTP(&sessionWriter{ResponseWriter: w, ended: func() bool { return !m.isOpen(id) }, refuse: func() {
				m.refuse(w, r, http.StatusNotFound, sessionNotFound, msgSessionNotOpen)
			}}, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// sessionWriter passes a session's request's response on, but for the 404
// mcp-go answers, in plain text, for a session that ended after the guard
// looked (the idle reaper can end it in between): that one becomes the
// guard's own refusal, so that clients get one answer for a session gone.
type sessionWriter struct {
	http.ResponseWriter
	ended   func() bool
	refuse  func()
	refused bool
}

func (w *sessionWriter) WriteHeader(status int) {
	if status == http.StatusNotFound && w.ended() {
		w.refused = true
		w.refuse()
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	if w.refused {
		return len(p), nil // mcp-go's words, replaced by the refusal
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on the flushes of a streamed (SSE) response.
func (w *sessionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuseFull answers a request that would start a session past the bound with
// 503, Retry-After (wait, in whole seconds) and a JSON-RPC error that says
// how many sessions are open (bound) and then what to do, in the words of
// the transport.
func refuseFull(log *slog.Logger, trusted []netip.Prefix, w http.ResponseWriter, r *http.Request, bound int, wait time.Duration, then string) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	refuseRequest(log, trusted, w, r, http.StatusServiceUnavailable, mcp.INTERNAL_ERROR, fmt.Sprintf(
		"pgbus: the server has %s open, as many as it keeps; %s", plural.Count(bound, "MCP session", "MCP sessions"), then))
}

// startSession passes on a request that may start a session when there is
// room for one, or a session idle the longest to end for it, and refuses it
// with 503 when there is neither.
func (m *sessions) startSession(w http.ResponseWriter, r *http.Request, next http.Handler) {
	ok, ended, idle, wait := m.reserve()
	if !ok {
		refuseFull(m.log, m.trusted, w, r, m.max, wait, fmt.Sprintf(
			"none is idle without an event stream: each has one open, or a request under way; "+
				"the first can be ended once it has neither, or once idle for the idle timeout (%s), in %s at the latest: "+
				"end sessions no longer used (DELETE with their Mcp-Session-Id, as clients do when they close), or initialize again after Retry-After",
			m.idleTTL, wait.Round(time.Second)))
		return
	}
	if ended != "" {
		if m.endedForRoom.Due(time.Now()) {
			// The bound's key names no session: the log's redaction hides
			// the values of keys that do.
			m.log.Info("MCP session ended, idle the longest, to make room for a new one (said at most once a minute)",
				"idle", idle.Round(time.Second), "max", m.max, "ended_since_last_said", m.endedUntold.Swap(0))
		} else {
			m.endedUntold.Add(1)
		}
		m.end(ended)
	}
	slot := &issued{}
	answer := &initWriter{ResponseWriter: w}
	next.ServeHTTP(answer, r.WithContext(context.WithValue(r.Context(), issuedKey{}, slot)))
	started := slot.id != "" && answer.started(slot.id)
	switch {
	case slot.id == "":
		m.unreserve() // no session was issued: the place goes back
	case started:
		m.started(slot.id)
	case !started:
		// Generate took the place, but the initialize failed, or its
		// answer did not give the client the id: no client can use the
		// session, or end it, so it ends now, before the answer leaves.
		m.end(slot.id)
	}
	answer.release(started)
}

// maxInitAnswer bounds the part of an initialize's answer held to tell
// whether it succeeded; a JSON-RPC error is far shorter.
const maxInitAnswer = 1 << 20

// initWriter holds the answer of a request that may start a session until
// the request is handled (release), so that the Mcp-Session-Id header
// mcp-go sets goes out only with an initialize that succeeded: mcp-go
// sets it on an initialize's JSON-RPC error too, which gave a client the
// id of a session that was never usable. An answer streamed as events
// (which mcp-go gives no session id) is passed on as it comes, keeping its
// start; so is an answer held past maxInitAnswer, which no error is.
type initWriter struct {
	http.ResponseWriter
	status    int
	body      bytes.Buffer
	truncated bool
	held      bool // the status and body are held until release
}

func (w *initWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if media, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); media == mediaStream {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.held = true
}

func (w *initWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.held && w.body.Len()+len(p) > maxInitAnswer {
		// Longer than any error: the initialize's result, sent as is.
		w.truncated = true
		w.held = false
		w.ResponseWriter.WriteHeader(w.status)
		if _, err := w.ResponseWriter.Write(w.body.Bytes()); err != nil {
			return 0, err
		}
	}
	if w.held {
		return w.body.Write(p)
	}
	if room := maxInitAnswer - w.body.Len(); room < len(p) {
		w.body.Write(p[:max(room, 0)])
		w.truncated = true
	} else {
		w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on the flushes of a streamed (SSE) response; a held answer
// is sent whole by release.
func (w *initWriter) Flush() {
	if w.held {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *initWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// release sends a held answer, without the Mcp-Session-Id header unless
// it started a session.
func (w *initWriter) release(started bool) {
	if !w.held {
		return
	}
	w.held = false
	if !started {
		w.Header().Del(server.HeaderKeySessionID)
	}
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

// started reports whether the answer started session id: 200 with the id
// in its Mcp-Session-Id header and a JSON-RPC result, not an error.
func (w *initWriter) started(id string) bool {
	if w.status != http.StatusOK || w.Header().Get(server.HeaderKeySessionID) != id {
		return false
	}
	if w.truncated {
		return true // longer than any error: the initialize's result
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(w.body.Bytes(), &msg) != nil {
		return false
	}
	return len(msg.Result) > 0 && string(msg.Result) != "null" && (len(msg.Error) == 0 || string(msg.Error) == "null")
}

// refuse answers with status and a JSON-RPC error without an id, as the
// transport does for requests it cannot take.
func (m *sessions) refuse(w http.ResponseWriter, r *http.Request, status, code int, msg string) {
	refuseRequest(m.log, m.trusted, w, r, status, code, msg)
}

// refuseRequest is sessions.refuse for any transport: it logs the refusal
// with the client it came from (behind the trusted proxies).
func refuseRequest(log *slog.Logger, trusted []netip.Prefix, w http.ResponseWriter, r *http.Request, status, code int, msg string) {
	log.Info("MCP HTTP request refused", "status", status, "method", r.Method, "remote", r.RemoteAddr, "client", clientaddr.Name(r, trusted), "reason", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
}

// streamableHandler returns the Streamable HTTP transport of s at PathMCP,
// with sessions only this server issues, behind the check of each POST's
// media types (checkMedia), and the function that ends them.
func streamableHandler(s *server.MCPServer, cfg HTTPConfig) (http.Handler, func(context.Context), *sessions) {
	ids := newSessions(cfg)
	events := newRecentEvents()
	opts := []server.StreamableHTTPOption{
		server.WithEndpointPath(PathMCP),
		server.WithStreamableHTTPLogger(cfg.Logger),
		server.WithSessionIdManagerResolver(ids),
		server.WithSessionIdleTTL(cfg.sessionIdleTTL),
		server.WithEventStore(events),
		// The security gate in front checks the Host header against the
		// listen address and AllowedHosts; mcp-go's own check knows only
		// loopback names and refused a proxy's Host that AllowedHosts
		// gives.
		server.WithDisableLocalhostProtection(true),
	}
	if cors := corsOrigins(cfg.AllowedOrigins); len(cors) > 0 {
		opts = append(opts, server.WithStreamableHTTPCORS(server.WithCORSAllowedOrigins(cors...)))
	}
	h := server.NewStreamableHTTPServer(s, opts...)
	ids.door = frontDoor{s: s, each: eachPOST}
	ids.end = func(id string) { endSession(h, id) }
	return checkMedia(cfg.Logger, cfg.TrustedProxies, ids.guard(trackWrites(h, events))), func(ctx context.Context) {
		_ = h.Shutdown(ctx)
		ids.closeAll()
	}, ids
}

// peekMethod reads the JSON-RPC method of a POST's body, left in place for
// the handler, its id as sent (empty for a notification, which has none),
// and whether the body is a batch (a JSON array). A body it cannot read
// gives none: the transport answers it.
func peekMethod(r *http.Request) (method, id string, batch bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return "", "", false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return "", "", false
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return "", "", true
	}
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return "", "", false
	}
	return msg.Method, string(msg.ID), false
}

// clipMethod bounds a method name a client sent, for a message.
func clipMethod(m string) string {
	if len(m) > 60 {
		m = m[:60] + "…"
	}
	return strconv.Quote(m)
}

// endSession ends session id in h as a DELETE of it would, for a session
// whose initialize failed: its id is closed, and mcp-go forgets what it
// registered of it.
func endSession(h http.Handler, id string) {
	r, err := http.NewRequest(http.MethodDelete, PathMCP, nil)
	if err != nil {
		return // a constant method and path: never
	}
	r.Header.Set(server.HeaderKeySessionID, id)
	h.ServeHTTP(discardWriter{header: http.Header{}}, r)
}

// discardWriter takes an answer no one reads.
type discardWriter struct{ header http.Header }

func (w discardWriter) Header() http.Header         { return w.header }
func (w discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w discardWriter) WriteHeader(int)             {}
