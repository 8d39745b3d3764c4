package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The DLQs that hold a group are read from the group counts of those that
// keep them, and from the messages of one whose counts are not kept (its
// triggers off while rows were written); a DLQ without the group, a key
// no DLQ holds and a key that is none are told apart.
func TestDeadGroupHolders(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	counted, untracked, without := newQueue(t, s), newQueue(t, s), newQueue(t, s)
	raw := func(q, kind string) {
		t.Helper()
		exec(t, s, `INSERT INTO pgmq."q_`+store.DLQName(q)+`" (vt, message) VALUES (clock_timestamp(), '{"job_class": "`+kind+`"}')`)
	}
	raw(counted, "RubyJob")
	raw(without, "OtherJob")
	exec(t, s, `ALTER TABLE pgmq."q_`+store.DLQName(untracked)+`" DISABLE TRIGGER pgbus_dlq_groups_ins`)
	raw(untracked, "RubyJob")
	sum, err := s.SummarizeDeadReport(ctx, store.DeadFilter{Queue: counted})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of %s: %+v, %v", counted, sum, err)
	}
	got, err := s.DeadGroupHolders(ctx, sum.Groups[0].Group)
	want := []string{store.DLQName(counted), store.DLQName(untracked)}
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("DLQs holding the group: %v, %v; want %v", got, err, want)
	}
	if got, err := s.DeadGroupHolders(ctx, "00000000-0000-0000-0000-000000000000"); err != nil || len(got) != 0 {
		t.Errorf("DLQs holding a key no group has: %v, %v; want none", got, err)
	}
	if _, err := s.DeadGroupHolders(ctx, "not-a-key"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("DLQs holding a key that is none: %v; want ErrInvalid", err)
	}
}
