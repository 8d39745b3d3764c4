package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A call whose database session an administrator ends under it
// (pg_terminate_backend, SQLSTATE 57P01 admin_shutdown) says so, and to
// make the call again, rather than that the database is down or the
// network to it cut: the database answers, and a new session works. A
// bulk retry keeps saying what it did and what remains.
func TestCallWhoseSessionAnAdministratorEndedSaysSo(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	// Reads wait for the lock as long as writes: whichever statement of
	// the call waits is the one ended, never one that gave up first.
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: longCallTimeout, ReadLockWait: longCallTimeout})
	ctx := testContext(t)
	other := pgtest.OpenStore(t, url)

	for name, req := range map[string]ops.DLQRetryRequest{"by id": {IDs: ids[:1]}, "by filter": {Filter: ops.DeadFilter{Queue: q}}} {
		lock := pgtest.HoldLock(t, other, "q_"+q)
		done := make(chan error, 1)
		go func() {
			_, err := svc.DLQRetry(ctx, req)
			done <- err
		}()
		// Every session of the call that waits for the lock is ended, as
		// it comes: a call may wait in more than one statement.
		var err error
		ended := 0
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-time.After(20 * time.Millisecond):
				for _, pid := range lock.Waiting() {
					ended += pgtest.Int(t, other, `SELECT count(*) FROM pg_terminate_backend($1) ok WHERE ok`, pid)
				}
			}
		}
		if ended == 0 {
			t.Fatalf("a retry %s ended before any session of it waited for the lock: %v", name, err)
		}
		lock.Release()
		if err == nil {
			t.Fatalf("a retry %s whose session was ended: no error", name)
		}
		// As every front end shows it: redacted.
		msg, _ := ops.RedactText(err.Error())
		again := "try the call again"
		if name == "by filter" {
			again = "the same call again retries them" // what remains, as a bulk call says it
		}
		for _, want := range []string{"ended the call's session, as an administrator does (pg_terminate_backend)", again} {
			if !strings.Contains(msg, want) {
				t.Errorf("a retry %s whose session was ended: %v; want it to say %q", name, err, want)
			}
		}
		if strings.Contains(msg, "the network to it is cut") {
			t.Errorf("a retry %s whose session was ended: %v; want the session ended, not a database down or a network cut", name, err)
		}
		if k := ops.ErrorKind(err); k != ops.KindUnavailable {
			t.Errorf("a retry %s whose session was ended: kind %s; want unavailable", name, k)
		}
		var pd *ops.PartlyDone
		if name == "by filter" && (!errors.As(err, &pd) || pd.Done != 0) {
			t.Errorf("a retry by filter whose session was ended: %v; want it to say what it did (nothing) and what remains", err)
		}
	}
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatalf("the retry again: %v", err)
	}
	if live := pgtest.Live(t, s, q); live != 3 {
		t.Fatalf("after the retry again: %d in the queue; want the 3 messages once each", live)
	}
}
