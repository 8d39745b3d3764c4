package store_test

import (
	"context"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// notificationsOf counts the notifications for queue that l receives
// before the one of a send to a fresh marker queue: notifications arrive
// in commit order, so by then every earlier one has come.
func notificationsOf(t *testing.T, s *store.Store, l *store.Listener, queue string) int {
	t.Helper()
	ctx := testContext(t)
	marker := newQueue(t, s)
	if _, err := s.Send(ctx, marker, msg(`{}`)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		got, err := l.WaitForSend(ctx)
		if err != nil {
			t.Fatalf("waiting for the marker's notification: %v", err)
		}
		if got == marker {
			return n
		}
		if got == queue {
			n++
		}
	}
}

// A retry of many dead messages wakes their queue's workers once, after
// its moves, not once for each: each notification would take, at its
// move's commit, the lock that every notifying transaction of the cluster
// takes in turn. A guarded retry, one transaction, also notifies once; a
// retry that moves nothing does not notify.
func TestRetryDeadNotifiesEachQueueOnce(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	l, err := s.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())

	ids, err := s.SendBatch(ctx, q, msgs(30))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, q, dlq, ids, "Boom", store.ReasonNonRetryable)
	notificationsOf(t, s, l, q) // the sends'
	rep, err := s.RetryDead(ctx, dlq, dead[:20], store.RetryOptions{})
	if err != nil || rep.Retried != 20 {
		t.Fatalf("retry = %+v, %v; want 20 retried", rep, err)
	}
	if n := notificationsOf(t, s, l, q); n != 1 {
		t.Fatalf("a retry of 20 messages notified %s %d times, want once", q, n)
	}

	dry, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 100, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 10 {
		t.Fatalf("dry run = %+v, %v; want the 10 left", dry, err)
	}
	if rep, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 100, store.RetryOptions{Expect: dry.Token}); err != nil || rep.Retried != 10 {
		t.Fatalf("guarded retry = %+v, %v; want 10 retried", rep, err)
	}
	if n := notificationsOf(t, s, l, q); n != 1 {
		t.Fatalf("a guarded retry of 10 messages notified %s %d times, want once", q, n)
	}

	if rep, _ = s.RetryDead(ctx, dlq, dead[:2], store.RetryOptions{}); rep.Retried != 0 {
		t.Fatalf("retry of messages already retried = %+v; want none retried", rep)
	}
	if n := notificationsOf(t, s, l, q); n != 0 {
		t.Fatalf("a retry that moved nothing notified %s %d times, want none", q, n)
	}
}
