package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/mcpnotify"
)

// Responses wait for the notifications sent before them.
//
// mcp-go v1.2.1 handed every notification of a session, progress and log
// records of a running call included, to whichever of two readers takes
// it first: the stream of the POST that carries the call, or the pump of
// the session's listening stream (GET), once the client opened one. A
// notification of a call may so leave on the GET stream just before the
// call's result leaves on the POST: a client may see the result first,
// and one that forgets a call's progress token with its result (the
// TypeScript SDK) drops the notification. The MCP conformance suite's
// tools-call-with-progress scenario failed that way now and then.
//
// v1.6 keeps a call's notifications on its own stream, as far as
// TestNotificationsBeforeResultWithGETStream sees, but says nothing of it
// and gives no way to ask for it: the ordering stays, as a guard that
// costs nothing while every notification takes the call's stream.
// recentEvents (the event store, which records every event of a
// Streamable HTTP session before it is written, with its id) and
// trackWrites (which sees every event written, by id) order them instead:
// while the session has a GET stream open, the response to a request is
// recorded, and so written, only once every progress notification the
// session's calls sent (counted by mcpnotify, which tools send them with)
// is recorded, and every event recorded before it on another stream has
// been flushed to the client, or after maxResponseWait. The notifications of a call so
// reach the client before its result, whichever stream carries them. They
// may still travel on the GET stream, which the transport specification
// says should carry only messages unrelated to running requests; only
// mcp-go can route them to the call's own stream.
const (
	// maxResponseWait bounds how long a response waits for earlier
	// events: a stream whose client went away never flushes them. It is
	// no shorter than a busy machine may take to flush one: at 2 seconds,
	// a loaded test run likely saw a call's result overtake its last
	// progress notification. Only a response after events a dead stream holds
	// waits that long, once: those events are given up on then.
	maxResponseWait = 5 * time.Second
)

// pendingEvent is an event recorded while the session had a GET stream
// open and not flushed to the client yet.
type pendingEvent struct {
	stream string
	at     time.Time
}

// isResponse reports whether message is a JSON-RPC response: an id, a
// result or an error, and no method.
func isResponse(message json.RawMessage) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(message, &m) != nil || m.Method != "" {
		return false
	}
	id := bytes.TrimSpace(m.ID)
	return len(id) > 0 && !bytes.Equal(id, []byte("null")) && (m.Result != nil || m.Error != nil)
}

// awaitEarlier waits, unless the session has no GET stream open, until
// the events recorded before now on streams other than stream are
// flushed, at most maxResponseWait. The caller does not hold r.mu.
func (r *recentEvents) awaitEarlier(sessionID, stream string) {
	r.mu.Lock()
	s := r.sessions[sessionID]
	listening := s != nil && s.listeners > 0
	r.mu.Unlock()
	if !listening {
		return
	}
	// The call's progress notifications may have been handed to the GET
	// stream's pump and not recorded yet: wait until every one sent is
	// recorded, then take the events before now.
	deadline := time.Now().Add(maxResponseWait)
	sent := mcpnotify.Sent(sessionID)
	for {
		r.mu.Lock()
		s := r.sessions[sessionID]
		if s == nil || s.listeners == 0 || s.progress >= sent {
			r.mu.Unlock()
			break
		}
		wake := r.changed
		r.mu.Unlock()
		if !waitUntil(wake, deadline) {
			return
		}
	}
	r.mu.Lock()
	before := r.seq + 1
	r.mu.Unlock()
	for {
		r.mu.Lock()
		s := r.sessions[sessionID]
		if s == nil || s.listeners == 0 || !s.hasPendingBefore(stream, before, time.Now()) {
			r.mu.Unlock()
			return
		}
		wake := r.changed
		r.mu.Unlock()
		if !waitUntil(wake, deadline) {
			return
		}
	}
}

// waitUntil waits for wake to close, and reports false when deadline
// passed first.
func waitUntil(wake <-chan struct{}, deadline time.Time) bool {
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-t.C:
		return false
	}
}

// isProgress reports whether message is a progress notification.
func isProgress(message json.RawMessage) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(message, &m) == nil && m.Method == mcpnotify.MethodProgress
}

// hasPendingBefore reports whether an event before id on a stream other
// than stream waits to be flushed. Events waiting longer than
// maxResponseWait are given up on: their stream lost its client, and
// would hold up every later response.
func (s *sessionEvents) hasPendingBefore(stream string, before int64, now time.Time) bool {
	found := false
	for id, p := range s.pending {
		switch {
		case now.Sub(p.at) > maxResponseWait:
			delete(s.pending, id)
		case id < before && p.stream != stream:
			found = true
		}
	}
	return found
}

// notifyLocked wakes the responses waiting in awaitEarlier. The caller
// holds r.mu.
func (r *recentEvents) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// flushed records that the events ids of sessionID reached the client.
func (r *recentEvents) flushed(sessionID string, ids []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[sessionID]
	if s == nil || len(s.pending) == 0 {
		return
	}
	for _, id := range ids {
		delete(s.pending, id)
	}
	r.notifyLocked()
}

// listen records that a GET stream of sessionID opened (+1) or closed (-1).
// Events recorded while no GET stream was open, for a client to resume
// later, are no longer waited for once a new one opens: a new stream
// does not carry them.
func (r *recentEvents) listen(sessionID string, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[sessionID]
	switch {
	case delta > 0:
		s = r.session(sessionID)
		clear(s.pending)
	case s == nil:
		return // the session ended while the stream was open
	}
	s.listeners += delta
	r.notifyLocked()
}

// trackWrites tells events which events each request's response writes
// to the client, and which sessions have a GET stream open; for a request
// of protocol 2026-07-28 and later, which has no session, it tells the
// request's handler which of its notifications are written
// (mcpnotify.Delivery).
func trackWrites(next http.Handler, events *recentEvents) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			ctx, d := mcpnotify.WithDelivery(r.Context())
			next.ServeHTTP(&deliveryWriter{ResponseWriter: w, delivery: d}, r.WithContext(ctx))
			return
		}
		id := r.Header.Get(server.HeaderKeySessionID)
		if id == "" {
			next.ServeHTTP(w, r)
			return
		}
		events.connect(id, 1)
		defer events.connect(id, -1)
		if r.Method == http.MethodGet {
			events.listen(id, 1)
			defer events.listen(id, -1)
		}
		tw := &trackingWriter{ResponseWriter: w, events: events, session: id}
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter notes the ids of the events written through it (mcp-go
// writes each "id: N" line with a Write of its own, and the rest of the
// event with the next) and reports them flushed when it flushes. An event
// that answers a request its client cancelled (recentEvents.takeDropped)
// it does not write.
type trackingWriter struct {
	http.ResponseWriter
	events  *recentEvents
	session string
	written []int64
	// skip drops the next write: the rest of an event not written.
	skip bool
}

func (w *trackingWriter) Write(p []byte) (int, error) {
	if w.skip {
		w.skip = false
		return len(p), nil
	}
	if rest, ok := bytes.CutPrefix(p, []byte("id: ")); ok {
		if id, ok := parseEventID(strings.TrimSpace(string(rest))); ok {
			if w.events.takeDropped(w.session, id) {
				w.skip = true
				return len(p), nil
			}
			w.written = append(w.written, id)
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush sends what was written to the client, and then counts its events
// as flushed.
func (w *trackingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	if len(w.written) > 0 {
		w.events.flushed(w.session, w.written)
		w.written = w.written[:0]
	}
}

// Unwrap lets http.ResponseController reach the connection (mcp-go sets
// write deadlines through it).
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// awaitNotifications holds a tool call's result until the notifications
// the call sent (its progress, its log records) are written, at most
// maxResponseWait. mcp-go v1.2.1 wrote those of a request of protocol
// 2026-07-28 over HTTP from a goroutine of their own, and dropped the one
// that goroutine holds once the result is on its way: the log record of
// a write call, sent as the call ends, was lost nearly every time.
func awaitNotifications(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := next(ctx, req)
		mcpnotify.AwaitWritten(ctx, maxResponseWait)
		return res, err
	}
}

// deliveryWriter reports to delivery each notification written through it
// (mcp-go writes each event with a Write of its own).
type deliveryWriter struct {
	http.ResponseWriter
	delivery *mcpnotify.Delivery
}

func (w *deliveryWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err == nil && isNotificationEvent(p) {
		w.delivery.Written()
	}
	return n, err
}

// isNotificationEvent reports whether p is one server-sent event carrying
// a JSON-RPC notification.
func isNotificationEvent(p []byte) bool {
	data, ok := bytes.CutPrefix(p, []byte("event: message\ndata: "))
	if !ok {
		return false
	}
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &m) == nil && m.Method != "" && m.ID == nil
}

// Flush sends what was written to the client.
func (w *deliveryWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deliveryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
