package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// A resumed stream gets the events of its own stream after the last one
// the client saw; events beyond the bounds are forgotten, oldest first,
// and resuming from one of them is refused as unknown.
func TestRecentEvents(t *testing.T) {
	ctx := context.Background()
	r := newRecentEvents()
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
