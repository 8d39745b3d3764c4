package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// ReadyQueues names the queues holding a message visible now: not an
// empty one, nor one whose only message is delayed.
func TestReadyQueuesNamesThoseWithVisibleMessages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	empty, delayed, ready := newQueue(t, s), newQueue(t, s), newQueue(t, s)
	if _, err := s.Send(ctx, delayed, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, ready, store.NewMessage{Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadyQueues(ctx, []string{empty, delayed, ready})
	if err != nil || !slices.Equal(got, []string{ready}) {
		t.Fatalf("ReadyQueues = %q, %v; want only %q", got, err, ready)
	}
}

// Bad input is refused before any statement: no queue, too many, names
// that are not queue names (an injection among them), and a queue that
// does not exist fails the call naming what it was doing.
func TestReadyQueuesRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	many := make([]string, store.MaxReadyCheck+1)
	for i := range many {
		many[i] = q
	}
	for name, queues := range map[string][]string{
		"none":      nil,
		"too many":  many,
		"injection": {q, `x") WHERE true; DROP TABLE pgmq.meta; --`},
		"empty":     {""},
	} {
		if _, err := s.ReadyQueues(ctx, queues); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: ReadyQueues error %v; want one of kind invalid", name, err)
		}
	}
	_, err := s.ReadyQueues(ctx, []string{q, uniqueName("nosuch")})
	if err == nil || !strings.Contains(err.Error(), "check 2 queues for visible messages") {
		t.Errorf("ReadyQueues of a missing queue: %v; want an error saying what it was doing", err)
	}
	if got, err := s.ReadyQueues(ctx, []string{q}); err != nil || len(got) != 0 {
		t.Errorf("ReadyQueues after the refusals = %q, %v; want the queue there and empty", got, err)
	}
}
