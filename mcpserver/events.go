package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/mcpnotify"
)

// Bounds of the events kept per session for a client to resume a broken
// stream: the most recent ones only, so that a long session with many
// log notifications does not grow without end.
const (
	maxSessionEvents = 256
	maxSessionBytes  = 4 << 20
)

// Bounds of the events kept of a session while no request of it is under
// way and no event stream of it open (detached): its client is gone, for
// a moment (a stream that broke, which it resumes) or for good (a client
// that left without ending its session, which lasts until it expires,
// its notifications recorded all the while). A detached session keeps
// only its most recent events, and no log notification sent meanwhile,
// which no one would read before the next ones.
const (
	maxDetachedEvents = 16
	maxDetachedBytes  = 256 << 10
)

// recentEvents is the Streamable HTTP transport's event store: it keeps the
// most recent events of each session so that a client can resume a broken
// stream (Last-Event-ID) for as long as they are kept.
//
// The server needed one for a second reason: without an event store, mcp-go
// v1.2.1 could drop a notification a tool sends just before its result (a
// progress notification, a log record of the call), because two goroutines
// of the POST race for it; with one, a single goroutine delivers them in
// order before the result.
//
// It also orders responses after the events sent before them on other
// streams (ordering.go).
type recentEvents struct {
	mu       sync.Mutex
	seq      int64
	sessions map[string]*sessionEvents
	// conns counts, by session, the requests under way and event streams
	// open (connect); a session not in it is detached.
	conns map[string]int
	// changed is closed, and replaced, whenever events are flushed or a
	// GET stream opens or closes, to wake the responses waiting.
	changed chan struct{}
}

type sessionEvents struct {
	events []storedEvent // oldest first
	bytes  int
	// listeners counts the session's GET streams open.
	listeners int
	// pending are the events recorded while a GET stream was open and
	// not flushed to the client yet, by id.
	pending map[int64]pendingEvent
	// progress counts the progress notifications recorded, to compare
	// with those the session's calls sent (mcpnotify.Sent).
	progress int64
	// dropped are the ids of the events not kept, and not to be written,
	// that answer a request its client cancelled (cancelled.go).
	dropped map[int64]struct{}
}

type storedEvent struct {
	id, stream string
	message    json.RawMessage
}

func newRecentEvents() *recentEvents {
	return &recentEvents{sessions: map[string]*sessionEvents{}, conns: map[string]int{}, changed: make(chan struct{})}
}

// session returns the events of sessionID, making them on first use. The
// caller holds r.mu.
func (r *recentEvents) session(sessionID string) *sessionEvents {
	s := r.sessions[sessionID]
	if s == nil {
		s = &sessionEvents{pending: map[int64]pendingEvent{}}
		r.sessions[sessionID] = s
	}
	return s
}

// parseEventID parses an event id of this store.
func parseEventID(id string) (int64, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil && n > 0
}

var _ server.EventStore = (*recentEvents)(nil)

// StoreEvent keeps message as the next event of stream, forgetting the
// session's oldest events beyond the bounds, those of a detached session
// when it is (maxDetachedEvents), and a log notification sent to a
// detached session at once. A response first waits for the events before
// it on other streams to be flushed (ordering.go). The answer to a
// request its client cancelled, whose POST's context (ctx) says so, is
// not kept, and its id is noted for trackingWriter not to write it.
func (r *recentEvents) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	if isResponse(message) {
		r.awaitEarlier(sessionID, streamID)
	}
	end, _ := ctx.Value(sessionEndKey{}).(*sessionEnd)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.session(sessionID)
	r.seq++
	id := strconv.FormatInt(r.seq, 10)
	if end.cancelledAnswer(message) {
		if s.dropped == nil {
			s.dropped = map[int64]struct{}{}
		}
		s.dropped[r.seq] = struct{}{}
		return id, nil
	}
	if isProgress(message) {
		s.progress++
		r.notifyLocked()
	}
	attached := r.conns[sessionID] > 0
	if !attached && isLogMessage(message) {
		return id, nil // no one reads it: not kept
	}
	if s.listeners > 0 {
		s.pending[r.seq] = pendingEvent{stream: streamID, at: time.Now()}
	}
	s.events = append(s.events, storedEvent{id: id, stream: streamID, message: append(json.RawMessage(nil), message...)})
	s.bytes += len(message)
	if attached {
		s.trim(maxSessionEvents, maxSessionBytes)
	} else {
		s.trim(maxDetachedEvents, maxDetachedBytes)
	}
	return id, nil
}

// trim forgets the oldest events beyond maxEvents and maxBytes, but for
// the most recent one.
func (s *sessionEvents) trim(maxEvents, maxBytes int) {
	for len(s.events) > 1 && (len(s.events) > maxEvents || s.bytes > maxBytes) {
		s.bytes -= len(s.events[0].message)
		if n, ok := parseEventID(s.events[0].id); ok {
			delete(s.pending, n)
		}
		s.events[0] = storedEvent{}
		s.events = s.events[1:]
	}
}

// connect records that a request of sessionID started (+1) or ended (-1),
// an event stream (GET) included. Once none is left, the session is
// detached, and keeps only its most recent events (maxDetachedEvents).
func (r *recentEvents) connect(sessionID string, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.conns[sessionID] + delta; n > 0 {
		r.conns[sessionID] = n
		return
	}
	delete(r.conns, sessionID)
	if s := r.sessions[sessionID]; s != nil && len(s.events) > 0 {
		s.trim(maxDetachedEvents, maxDetachedBytes)
		s.events = slices.Clone(s.events) // lets go of the room of the rest
	}
}

// isLogMessage reports whether message is a log notification
// (notifications/message).
func isLogMessage(message json.RawMessage) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(message, &m) == nil && m.Method == string(mcp.MethodNotificationMessage)
}

// ReplayEventsAfter sends the events of lastEventID's stream kept after it,
// in order. An event no longer kept is unknown: the client starts afresh.
func (r *recentEvents) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	r.mu.Lock()
	var stream string
	var tail []storedEvent
	if s := r.sessions[sessionID]; s != nil {
		for i, ev := range s.events {
			if ev.id == lastEventID {
				stream = ev.stream
				for _, later := range s.events[i+1:] {
					if later.stream == stream {
						tail = append(tail, later)
					}
				}
				break
			}
		}
	}
	r.mu.Unlock()
	if stream == "" {
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	for _, ev := range tail {
		if err := send(ev.id, ev.message); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession forgets the events of a session that ended.
func (r *recentEvents) PurgeSession(_ context.Context, sessionID string) error {
	r.mu.Lock()
	delete(r.sessions, sessionID)
	r.notifyLocked()
	r.mu.Unlock()
	mcpnotify.Forget(sessionID)
	return nil
}

// takeDropped reports whether event id of sessionID answers a request its
// client cancelled (StoreEvent), which is then not to be written, and
// forgets it.
func (r *recentEvents) takeDropped(sessionID string, id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[sessionID]
	if s == nil {
		return false
	}
	if _, ok := s.dropped[id]; !ok {
		return false
	}
	delete(s.dropped, id)
	return true
}
