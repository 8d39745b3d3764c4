package ops_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A drop or purge reads what the queue holds before it writes. A lock
// another session holds on the queue's table stops that read, which waits
// as any read does (Options.ReadLockWait), not the call's whole bound,
// and says so once: which session holds the lock and how to end it, and
// that nothing was changed, since the write never began.
func TestDropAndPurgeHeldByALockBeforeTheirWrite(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: 20 * time.Second})
	ctx := testContext(t)
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q)
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)

	calls := map[string]func() error{
		"drop": func() error {
			_, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true})
			return err
		},
		"purge": func() error {
			_, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: q, Confirm: true})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Fatalf("a %s held by a lock: no error", name)
		}
		msg := err.Error()
		if n := strings.Count(msg, end); n != 1 {
			t.Errorf("a %s held by a lock: %v; want %s said once, not %d times", name, err, end, n)
		}
		if n := strings.Count(msg, "for a lock another session holds"); n != 1 {
			t.Errorf("a %s held by a lock: %v; want the wait said once, not %d times", name, err, n)
		}
		for _, want := range []string{"waited " + ops.DefaultReadLockWait.String() + " for a lock", "nothing was changed"} {
			if !strings.Contains(msg, want) {
				t.Errorf("a %s held by a lock: %v; want it to say %q", name, err, want)
			}
		}
		for _, not := range []string{"database call timeout", "check before calling again", "did not answer"} {
			if strings.Contains(msg, not) {
				t.Errorf("a %s held by a lock: %v; want no %q: the read before the write waited its lock bound", name, err, not)
			}
		}
		if k := ops.ErrorKind(err); k != ops.KindUnavailable {
			t.Errorf("a %s held by a lock: kind %s; want unavailable", name, k)
		}
		if next := ops.NextSteps(err); len(next) != 1 || next[0].Op != "queue_"+name || next[0].Args["queue"] != q || next[0].Args["confirm"] != true {
			t.Errorf("a %s held by a lock: next steps %+v; want the same %s again only, not the health check, which would say OK", name, next, name)
		}
	}

	lock.Release()
	if live, dead := pgtest.Live(t, s, q), pgtest.Live(t, s, store.DLQName(q)); live != 0 || dead != 2 {
		t.Fatalf("after the calls held by a lock: %d live, %d dead; want the 2 dead messages untouched", live, dead)
	}
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true}); err != nil {
		t.Fatalf("the drop once the lock went: %v", err)
	}
}

// With no bound of their own on lock waits (a negative ReadLockWait), the
// reads before a drop or purge wait for a lock the call's bound, and say
// so once too, with nothing changed.
func TestDropAndPurgeGivenUpBeforeTheirWriteSayItOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second, ReadLockWait: -1})
	ctx := testContext(t)
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q)
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)
	for name, call := range map[string]func() error{
		"drop": func() error {
			_, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true})
			return err
		},
		"purge": func() error {
			_, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: q, Confirm: true})
			return err
		},
	} {
		err := call()
		if err == nil {
			t.Fatalf("a %s held by a lock: no error", name)
		}
		msg := err.Error()
		if n := strings.Count(msg, end); n != 1 || strings.Count(msg, "waited 1s (database call timeout) for a lock") != 1 {
			t.Errorf("a %s held by a lock: %v; want the wait and %s said once each", name, err, end)
		}
		if !strings.Contains(msg, "nothing was changed") || strings.Contains(msg, "check before calling again") {
			t.Errorf("a %s held by a lock: %v; want it to say that nothing was changed, not to check before calling again", name, err)
		}
	}
}
