package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue's deadline under a millisecond, as a bare number meant as
// seconds is (Deadline: 30, 30ns), is refused, where it was stored as
// whole milliseconds, 0, which is no deadline at all; 1ms and 0 (none)
// are taken.
func TestQueueDeadlineUnderAMillisecondIsRefused(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := uniqueName("dl")
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	qs := store.DefaultQueueSettings(q)
	qs.Deadline = 30
	err := s.CreateQueueWithSettings(ctx, 0, qs)
	if want := "deadline 30ns"; !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "30 * time.Second") {
		t.Errorf("CreateQueueWithSettings with Deadline 30: %v; want ErrInvalid saying %q and suggesting 30 * time.Second", err, want)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.queues WHERE queue_name = $1`, q); n != 0 {
		t.Errorf("the queue was created with the deadline refused (%d rows)", n)
	}
	for _, ok := range []time.Duration{0, time.Millisecond} {
		qs.Deadline = ok
		if err := s.CreateQueueWithSettings(ctx, 0, qs); err != nil {
			t.Errorf("CreateQueueWithSettings with Deadline %s: %v", ok, err)
		}
	}
	qs.Deadline = 5
	if err := s.SetQueueSettings(ctx, qs); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "deadline 5ns") {
		t.Errorf("SetQueueSettings with Deadline 5: %v; want ErrInvalid", err)
	}
	got, err := s.QueueSettingsOf(ctx, q)
	if err != nil || got.Deadline != time.Millisecond {
		t.Errorf("the queue's deadline is %s (%v); want the 1ms last taken", got.Deadline, err)
	}
}
