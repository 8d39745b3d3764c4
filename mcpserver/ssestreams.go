package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/metrics"
)

// maxUnansweredSSE bounds the requests of one session of the SSE transport
// whose answers are not yet written to its event stream: as many as
// mcp-go's queue of a session's events holds. mcp-go answers each POST to
// PathMessage with 202 at once and serves its message from a goroutine of
// its own, which waits, holding the answer, for room in that queue: a
// client that posts request after request and does not read its stream
// would otherwise grow the server without end.
const maxUnansweredSSE = 100

// unansweredRetryAfter is the Retry-After, in seconds, of a message refused
// because its session has maxUnansweredSSE requests unanswered.
const unansweredRetryAfter = 5

// sseStreams knows the event streams of the legacy SSE transport, each a
// session, so that the tool calls of a session end when its stream does:
// mcp-go runs a message posted to PathMessage detached from its POST,
// which it answers 202 at once, and would run a call on for a client that
// is gone (a bulk retry moving message after message nobody waits for).
// The stream is how the transport knows its client left: its GET ends
// when the client disconnects, and when the server ends it.
//
// It also counts, for each stream, the requests whose answers are not yet
// written to it, and refuses a message past maxUnansweredSSE (messages).
type sseStreams struct {
	mu   sync.Mutex
	open map[string]*sseStream
}

// sseStream is what sseStreams knows of one event stream.
type sseStream struct {
	end *sessionEnd
	// session is mcp-go's session of the stream, once it registered it
	// (registered) or served a message of it (callContext).
	session server.ClientSession
	// unanswered counts the requests taken whose answer is not yet
	// written to the stream.
	unanswered int
}

func newSSEStreams() *sseStreams {
	return &sseStreams{open: map[string]*sseStream{}}
}

// openNow is what s holds open now: its event streams, each a session.
func (s *sseStreams) openNow() metrics.MCPOpen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return metrics.MCPOpen{Sessions: len(s.open), Streams: len(s.open)}
}

// sseSlotKey keys, in the context of a GET of PathSSE, the *issued that
// records the session id generate issued to the stream.
type sseSlotKey struct{}

// generate issues the session id of a new stream: 32 bytes from
// crypto/rand, in hex, as the Streamable HTTP transport's are. It
// implements mcp-go's server.SessionIDGenFunc.
func (s *sseStreams) generate(ctx context.Context, _ *http.Request) (string, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails: crypto/rand aborts the program instead
	id := hex.EncodeToString(b)
	if slot, ok := ctx.Value(sseSlotKey{}).(*issued); ok {
		s.mu.Lock()
		s.open[id] = &sseStream{end: &sessionEnd{ended: make(chan struct{}), done: make(chan struct{}), streamClosed: true}}
		s.mu.Unlock()
		slot.id = id
	}
	return id, nil
}

// watch has srv tell s of the sessions it registers, when srv has hooks
// (every server New builds has): a message that is no request is then
// served by messages itself.
func (s *sseStreams) watch(srv *server.MCPServer) {
	if hooks := srv.GetHooks(); hooks != nil {
		hooks.AddOnRegisterSession(s.registered)
	}
}

// registered records the session mcp-go registered for a stream of s.
func (s *sseStreams) registered(ctx context.Context, session server.ClientSession) {
	slot, ok := ctx.Value(sseSlotKey{}).(*issued)
	if !ok || slot.id == "" {
		return
	}
	s.mu.Lock()
	if st := s.open[slot.id]; st != nil && st.session == nil {
		st.session = session
	}
	s.mu.Unlock()
}

// track serves the event streams of next, and ends the calls of each
// session once its stream ends.
func (s *sseStreams) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		slot := &issued{}
		defer func() {
			if slot.id != "" {
				s.close(slot.id)
			}
		}()
		next.ServeHTTP(&answerWriter{ResponseWriter: w, streams: s, slot: slot},
			r.WithContext(context.WithValue(r.Context(), sseSlotKey{}, slot)))
	})
}

// close ends the session of stream id: its calls under way are stopped.
func (s *sseStreams) close(id string) {
	s.mu.Lock()
	st := s.open[id]
	delete(s.open, id)
	s.mu.Unlock()
	if st != nil {
		close(st.end.ended)
	}
}

// callContext gives a message posted for a session the end of its stream,
// which stopCallsOfEndedSessions watches. It implements mcp-go's
// server.SSEContextFunc.
func (s *sseStreams) callContext(ctx context.Context, r *http.Request) context.Context {
	s.mu.Lock()
	st := s.open[r.URL.Query().Get("sessionId")]
	if st != nil && st.session == nil {
		st.session = server.ClientSessionFromContext(ctx)
	}
	s.mu.Unlock()
	if st == nil {
		return ctx
	}
	return context.WithValue(ctx, sessionEndKey{}, st.end)
}

// take counts one more request of stream id unanswered, and reports false
// when it has maxUnansweredSSE already. It gives the stream's session,
// nil while mcp-go has not told it, and whether the stream is open.
func (s *sseStreams) take(id string) (ok bool, session server.ClientSession, open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.open[id]
	if st == nil {
		return false, nil, false
	}
	if st.unanswered >= maxUnansweredSSE {
		return false, st.session, true
	}
	st.unanswered++
	return true, st.session, true
}

// answered counts one request of stream id fewer unanswered: its answer
// was written, or it will have none.
func (s *sseStreams) answered(id string) {
	s.mu.Lock()
	if st := s.open[id]; st != nil && st.unanswered > 0 {
		st.unanswered--
	}
	s.mu.Unlock()
}

// messages serves the POSTs of PathMessage, before sse (behind door, as
// sseDoor shows them): a message whose session has maxUnansweredSSE
// requests unanswered is refused with 429 and Retry-After. A request
// (mcp-go answers each, once) is counted until its answer is written to
// the stream (answerWriter). Any other message, a notification or the
// client's answer to a ping, is served here, in its POST, so that an
// answer it gets (an error) is counted too: mcp-go answers a notification
// it cannot take, from a goroutine that waits for room in the queue as a
// request's does.
func (s *sseStreams) messages(srv *server.MCPServer, sse *server.SSEServer, door frontDoor, cfg HTTPConfig) http.Handler {
	passOn := sseDoor(sse, door, sse)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			passOn.ServeHTTP(w, r)
			return
		}
		id := r.URL.Query().Get("sessionId")
		ok, session, open := s.take(id)
		switch {
		case !open:
			passOn.ServeHTTP(w, r) // mcp-go refuses a session it does not know
			return
		case !ok:
			w.Header().Set("Retry-After", strconv.Itoa(unansweredRetryAfter))
			refuseRequest(cfg.Logger, cfg.TrustedProxies, w, r, http.StatusTooManyRequests, mcp.INTERNAL_ERROR, fmt.Sprintf(
				"pgbus: this session has %d requests whose answers are not yet written to its event stream, as many as it may have: "+
					"read the answers from the stream (GET %s) and let the calls under way end, then send this message again",
				maxUnansweredSSE, PathSSE))
			return
		}
		body := peekBody(r)
		message, isRequest := sseRequest(body)
		if isRequest || session == nil {
			// A request, answered once, by door or by mcp-go: counted
			// until the answer is written. Any other message before
			// mcp-go told its session stays counted unless an answer
			// to it is written.
			sw := &statusWriter{ResponseWriter: w}
			passOn.ServeHTTP(sw, r)
			if sw.status != http.StatusAccepted {
				s.answered(id) // refused: it gets no answer on the stream
			}
			return
		}
		answer := door.answer(r.Context(), body)
		if answer == nil {
			ctx := srv.WithContext(context.WithoutCancel(r.Context()), session)
			answer = srv.HandleMessage(s.callContext(ctx, r), message)
		}
		if answer == nil {
			s.answered(id)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if err := sse.SendEventToSession(id, answer); err != nil {
			// Its queue is full: the client does not read its stream.
			s.answered(id)
			w.Header().Set("Retry-After", strconv.Itoa(unansweredRetryAfter))
			refuseRequest(cfg.Logger, cfg.TrustedProxies, w, r, http.StatusTooManyRequests, mcp.INTERNAL_ERROR, fmt.Sprintf(
				"pgbus: the event stream of this session holds as many answers not yet read as it may: read them from the stream (GET %s), then send this message again",
				PathSSE))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// sseRequest reads the message of a POST's body as mcp-go's message
// endpoint does (the first JSON value), and reports whether it is a
// request, which mcp-go answers whatever it holds: a message with an id
// that is not null and without a result. mcp-go answers nothing only to a
// notification (no id, or null) it can take, and to a result (the
// client's answer to a ping); a body it cannot read it refuses without
// serving it.
func sseRequest(body []byte) (json.RawMessage, bool) {
	var message json.RawMessage
	if json.NewDecoder(bytes.NewReader(body)).Decode(&message) != nil {
		return nil, true
	}
	var m struct {
		ID     json.RawMessage `json:"id,omitempty"`
		Result json.RawMessage `json:"result,omitempty"`
	}
	if json.Unmarshal(message, &m) != nil {
		return message, true // mcp-go answers a parse error
	}
	null := []byte("null")
	return message, len(m.ID) > 0 && !bytes.Equal(m.ID, null) && (len(m.Result) == 0 || bytes.Equal(m.Result, null))
}

// answerWriter passes on the event stream of a session of the SSE
// transport, and counts each answer written to it (sseStreams.answered):
// mcp-go writes each event in a Write of its own.
type answerWriter struct {
	http.ResponseWriter
	streams *sseStreams
	slot    *issued // the stream's session id, once issued
}

func (w *answerWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if w.slot.id != "" && isAnswerEvent(p) {
		w.streams.answered(w.slot.id)
	}
	return n, err
}

// Flush passes on the flushes of the event stream.
func (w *answerWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isAnswerEvent reports whether p is one server-sent event carrying a
// JSON-RPC answer: a message without a method (a ping or a notification
// has one).
func isAnswerEvent(p []byte) bool {
	_, data, ok := bytes.Cut(p, []byte("\ndata:"))
	if !ok {
		return false
	}
	var m struct {
		Method *json.RawMessage `json:"method"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &m) == nil && m.Method == nil
}

// statusWriter notes the status of the response written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}
