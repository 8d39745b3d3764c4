package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

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
}

type storedEvent struct {
	id, stream string
	message    json.RawMessage
}

func newRecentEvents() *recentEvents {
	return &recentEvents{sessions: map[string]*sessionEvents{}, changed: make(chan struct{})}
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
// session's oldest events beyond the bounds. A response first waits for
// the events before it on other streams to be flushed (ordering.go).
func (r *recentEvents) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	if isResponse(message) {
		r.awaitEarlier(sessionID, streamID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.session(sessionID)
	r.seq++
	id := strconv.FormatInt(r.seq, 10)
	if isProgress(message) {
		s.progress++
		r.notifyLocked()
	}
	if s.listeners > 0 {
		s.pending[r.seq] = pendingEvent{stream: streamID, at: time.Now()}
	}
	s.events = append(s.events, storedEvent{id: id, stream: streamID, message: append(json.RawMessage(nil), message...)})
	s.bytes += len(message)
	for len(s.events) > 1 && (len(s.events) > maxSessionEvents || s.bytes > maxSessionBytes) {
		s.bytes -= len(s.events[0].message)
		if n, ok := parseEventID(s.events[0].id); ok {
			delete(s.pending, n)
		}
		s.events[0] = storedEvent{}
		s.events = s.events[1:]
	}
	return id, nil
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
