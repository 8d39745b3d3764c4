package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A retry by filter whose database stops answering partway (a restart, a
// pooler killed) stops there and says so, with the moves done counted:
// the messages left were never tried, and counting each one failed by its
// connection error, as it did, sent the reader to mend failures that were
// none, on a call that ended with no error to retry it.
func TestRetryStopsWhenTheDatabaseStopsAnswering(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, cluster, s := pgtest.PrivateStore(t)
	const queue, n = "cut", 300
	pgtest.CreateQueue(t, s, queue)
	pgtest.DeadLetterN(t, s, queue, n, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	lock := pgtest.HoldLock(t, s, "q_"+queue)
	type answer struct {
		rep store.RetryReport
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: queue}, n, store.RetryOptions{})
		answered <- answer{rep, err}
	}()
	pgtest.Eventually(t, time.Minute, "the retry's moves waiting for the lock", func() bool { return len(lock.Waiting()) > 0 })
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	lock.Release()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(2 * time.Minute):
		t.Fatal("the retry has not answered two minutes after the database stopped")
	}
	if a.err == nil || !store.IsUnreachable(a.err) {
		t.Fatalf("retry: %d retried, %d failed, error %v; want the database unreachable as its error", a.rep.Retried, a.rep.Failed, a.err)
	}
	if a.rep.Failed != 0 || a.rep.Retried >= n {
		t.Errorf("retry counted %d retried and %d failed; want those moved before the stop and none failed: the rest were never tried", a.rep.Retried, a.rep.Failed)
	}
}
