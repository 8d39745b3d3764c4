package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// A resumed stream gets the events of its own stream after the last one
// the client saw; events beyond the bounds are forgotten, oldest first,
// and resuming from one of them is refused as unknown.
func TestRecentEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecentEvents()
	r.connect("s", 1) // a request of the session under way
	first, _ := r.StoreEvent(ctx, "s", "a", json.RawMessage(`1`))
	_, _ = r.StoreEvent(ctx, "s", "b", json.RawMessage(`2`))
	_, _ = r.StoreEvent(ctx, "s", "a", json.RawMessage(`3`))
	var got []string
	stream, err := r.ReplayEventsAfter(ctx, "s", first, func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	})
	if err != nil || stream != "a" || strings.Join(got, ",") != "3" {
		t.Fatalf("replay after the first event: stream %q, %v, %v; want stream a, [3]", stream, got, err)
	}
	if _, err := r.ReplayEventsAfter(ctx, "other", first, nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Fatalf("another session's event: %v; want unknown", err)
	}

	for range maxSessionEvents {
		_, _ = r.StoreEvent(ctx, "s", "a", json.RawMessage(`4`))
	}
	if n := len(r.sessions["s"].events); n != maxSessionEvents {
		t.Fatalf("%d events kept, want %d", n, maxSessionEvents)
	}
	if _, err := r.ReplayEventsAfter(ctx, "s", first, nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Fatalf("a forgotten event: %v; want unknown", err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", maxSessionBytes) + `"`)
	last, _ := r.StoreEvent(ctx, "s", "a", big)
	if s := r.sessions["s"]; len(s.events) != 1 || s.events[0].id != last {
		t.Fatalf("after an event over the byte bound: %d events kept; want only it", len(s.events))
	}
	_ = r.PurgeSession(ctx, "s")
	if _, err := r.ReplayEventsAfter(ctx, "s", last, nil); !errors.Is(err, server.ErrUnknownEventID) {
		t.Fatalf("after the session ended: %v; want unknown", err)
	}
}

// A session with no request under way and no event stream open (its
// client gone, or between two requests) keeps only its most recent
// events, and none of the log notifications sent meanwhile: a client that
// left without ending its session would otherwise hold every event the
// bounds allow, each log record at its level included, until the session
// expires. A client that resumes a broken stream still gets the events
// after the last one it saw, when that one is among the kept.
func TestRecentEventsOfADetachedSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRecentEvents()
	logRecord := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","data":"x"}}`)
	update := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"pgbus://queues"}}`)

	r.connect("s", 1)
	r.connect("s", 1) // a GET stream and a POST
	for range maxSessionEvents {
		_, _ = r.StoreEvent(ctx, "s", "listen", update)
	}
	seen, _ := r.StoreEvent(ctx, "s", "listen", logRecord)
	if n := len(r.sessions["s"].events); n != maxSessionEvents {
		t.Fatalf("%d events kept of a session with its stream open; want %d", n, maxSessionEvents)
	}
	r.connect("s", -1)
	if n := len(r.sessions["s"].events); n != maxSessionEvents {
		t.Fatalf("%d events kept of a session with a request still under way; want %d", n, maxSessionEvents)
	}
	r.connect("s", -1) // the client is gone
	if s := r.sessions["s"]; len(s.events) != maxDetachedEvents || s.events[len(s.events)-1].id != seen {
		t.Fatalf("%d events kept once the session's last connection closed; want the %d most recent", len(s.events), maxDetachedEvents)
	}
	missed, _ := r.StoreEvent(ctx, "s", "listen", update)
	for range 100 {
		_, _ = r.StoreEvent(ctx, "s", "listen", logRecord)
	}
	var got []string
	if _, err := r.ReplayEventsAfter(ctx, "s", seen, func(id string, _ json.RawMessage) error {
		got = append(got, id)
		return nil
	}); err != nil || strings.Join(got, ",") != missed {
		t.Fatalf("resume after the last event seen: %v, %v; want only the update sent since, %s, and no log record", got, err, missed)
	}
	for range maxSessionEvents {
		_, _ = r.StoreEvent(ctx, "s", "listen", update)
	}
	if n := len(r.sessions["s"].events); n != maxDetachedEvents {
		t.Fatalf("%d events kept of a session no connection is open for; want %d", n, maxDetachedEvents)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", maxDetachedBytes/4) + `"`)
	for range 8 {
		_, _ = r.StoreEvent(ctx, "s", "listen", big)
	}
	if b := r.sessions["s"].bytes; b > maxDetachedBytes {
		t.Fatalf("%d bytes of events kept of a session no connection is open for; want at most %d", b, maxDetachedBytes)
	}
	// A client back on the session gets every event again.
	r.connect("s", 1)
	for range maxSessionEvents {
		_, _ = r.StoreEvent(ctx, "s", "listen", logRecord)
	}
	if n := len(r.sessions["s"].events); n != maxSessionEvents {
		t.Fatalf("%d events kept once a connection is open again; want %d", n, maxSessionEvents)
	}
}

// While a GET stream is open, a response is recorded only once the events
// recorded before it on other streams are flushed; without a GET stream,
// or for events of its own stream, at once.
func TestResponseWaitsForEarlierEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	note := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`)
	result := json.RawMessage(`{"jsonrpc":"2.0","id":7,"result":{}}`)
	store := func(r *recentEvents, stream string, m json.RawMessage) <-chan string {
		done := make(chan string, 1)
		go func() {
			id, _ := r.StoreEvent(ctx, "s", stream, m)
			done <- id
		}()
		return done
	}
	// within waits for done generously: a loaded machine may take its
	// time; what it checks is that the event is recorded at all, not how
	// soon.
	within := func(what string, done <-chan string) string {
		t.Helper()
		select {
		case id := <-done:
			return id
		case <-time.After(time.Minute):
			t.Fatalf("%s: not recorded within a minute", what)
			return ""
		}
	}

	r := newRecentEvents()
	_, _ = r.StoreEvent(ctx, "s", "get", note)
	within("a result without a GET stream", store(r, "post", result))

	r.listen("s", 1)
	first := within("a notification", store(r, "get", note))
	own := within("a result after a notification of its own stream", store(r, "get", result))
	done := store(r, "post", result)
	select {
	case <-done:
		t.Fatal("the result was recorded before the notification on the GET stream was flushed")
	case <-time.After(100 * time.Millisecond):
	}
	n1, _ := parseEventID(first)
	n2, _ := parseEventID(own)
	r.flushed("s", []int64{n1, n2})
	within("the result once the notification was flushed", done)

	// A notification that is never flushed holds a result up to
	// maxResponseWait, not for ever.
	within("another notification", store(r, "get", note))
	within("a result after a notification never flushed", store(r, "post", result))

	r.listen("s", -1)
	_, _ = r.StoreEvent(ctx, "s", "get", note)
	within("a result once the GET stream closed", store(r, "post", result))
}

func TestIsResponse(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                   true,
		`{"jsonrpc":"2.0","id":"a","error":{"code":1}}`:          true,
		`{"jsonrpc":"2.0","method":"notifications/progress"}`:    false,
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create"}`: false,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`:    false,
		`not json`: false,
	} {
		if got := isResponse(json.RawMessage(msg)); got != want {
			t.Errorf("isResponse(%s) = %v, want %v", msg, got, want)
		}
	}
}
