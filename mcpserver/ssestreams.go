package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
)

// sseStreams knows the event streams of the legacy SSE transport, each a
// session, so that the tool calls of a session end when its stream does:
// mcp-go runs a message posted to PathMessage detached from its POST,
// which it answers 202 at once, and would run a call on for a client that
// is gone (a bulk retry moving message after message nobody waits for).
// The stream is how the transport knows its client left: its GET ends
// when the client disconnects, and when the server ends it.
type sseStreams struct {
	mu   sync.Mutex
	open map[string]*sessionEnd
}

func newSSEStreams() *sseStreams {
	return &sseStreams{open: map[string]*sessionEnd{}}
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
		s.open[id] = &sessionEnd{ended: make(chan struct{}), done: make(chan struct{}), streamClosed: true}
		s.mu.Unlock()
		slot.id = id
	}
	return id, nil
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sseSlotKey{}, slot)))
	})
}

// close ends the session of stream id: its calls under way are stopped.
func (s *sseStreams) close(id string) {
	s.mu.Lock()
	e := s.open[id]
	delete(s.open, id)
	s.mu.Unlock()
	if e != nil {
		close(e.ended)
	}
}

// callContext gives a message posted for a session the end of its stream,
// which stopCallsOfEndedSessions watches. It implements mcp-go's
// server.SSEContextFunc.
func (s *sseStreams) callContext(ctx context.Context, r *http.Request) context.Context {
	s.mu.Lock()
	e := s.open[r.URL.Query().Get("sessionId")]
	s.mu.Unlock()
	if e == nil {
		return ctx
	}
	return context.WithValue(ctx, sessionEndKey{}, e)
}
