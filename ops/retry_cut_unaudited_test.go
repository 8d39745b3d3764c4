package ops_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A retry by filter cut off once under way, before it retried any message,
// says that none was retried and nothing was lost, whether or not the
// entry of its start was written to the audit log: a guarded retry writes
// none, and the database may refuse it (or entries may be held after an
// outage) while the retry goes on.
func TestRetryCutOffBeforeAnyMovedSaysSoWithoutItsStartEntry(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	var logs pgtest.SyncBuffer
	svc := newService(t, s, ops.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	base := testContext(t)

	// cutRetry runs req while the queue q's table is locked, so that its
	// moves wait; first, when set, runs while the call runs; once its
	// moves wait, it cancels the call, ends the moves' sessions, and
	// returns the call's error.
	cutRetry := func(t *testing.T, q string, req ops.DLQRetryRequest, first func()) error {
		t.Helper()
		hold := pgtest.HoldLock(t, s, "q_"+q)
		ctx, cancel := context.WithCancel(base)
		defer cancel()
		done := make(chan error, 1)
		go func() { _, err := svc.DLQRetry(ctx, req); done <- err }()
		if first != nil {
			first()
		}
		pgtest.Eventually(t, time.Minute, "the retry's moves waiting for the queue's lock", func() bool {
			var n int
			err := s.Pool().QueryRow(base, `SELECT count(*) FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, "pgmq.q_"+q).Scan(&n)
			return err == nil && n > 0
		})
		cancel()
		// The moves under way, given a grace to finish, end on the server
		// without moving. Each lane's move is ended as it comes to wait:
		// on a busy machine one lane may reach the lock only after
		// another was ended, and would otherwise wait out the grace and
		// be cut off with its outcome unknown.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := s.Pool().Exec(base, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = $1::regclass AND NOT granted`, "pgmq.q_"+q); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				hold.Release()
				return err
			case <-tick.C:
			}
		}
	}
	check := func(t *testing.T, q string, err error) {
		t.Helper()
		var pd *ops.PartlyDone
		if !errors.As(err, &pd) || pd.Done != 0 || !strings.Contains(err.Error(), "none was retried and nothing was lost") {
			t.Errorf("retry cut off before any moved: %v; want it to say that none was retried and nothing was lost", err)
		}
		if n := pgtest.Live(t, s, q+"_dlq"); n != 3 {
			t.Errorf("the DLQ holds %d messages; want the 3 none of which moved", n)
		}
	}

	t.Run("guarded", func(t *testing.T) {
		q := newQueue(t, s, nil)
		pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{})
		dry, err := svc.DLQRetry(base, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, DryRun: true})
		if err != nil || dry.Expect == "" {
			t.Fatalf("dry run = %+v, %v; want an expect", dry, err)
		}
		check(t, q, cutRetry(t, q, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Expect: dry.Expect}, nil))
	})
	t.Run("start entry refused", func(t *testing.T) {
		q := newQueue(t, s, nil)
		pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{})
		// The entry of the retry's start waits for a lock on the audit log
		// and is then cancelled on the server, or, should the test not
		// get to cancel it in time on a busy machine, given up at its own
		// bound: the retry goes on without it.
		tx, err := s.Pool().Begin(base)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if _, err := tx.Exec(base, `LOCK TABLE pgbus.audit_log IN SHARE MODE`); err != nil {
			t.Fatal(err)
		}
		err = cutRetry(t, q, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}}, func() {
			pgtest.Eventually(t, time.Minute, "the start entry refused", func() bool {
				if _, err := tx.Exec(base, `SELECT pg_cancel_backend(pid) FROM pg_locks WHERE relation = 'pgbus.audit_log'::regclass AND NOT granted`); err != nil {
					t.Fatal(err)
				}
				return strings.Contains(logs.String(), "could not record the start of this operation in the audit log")
			})
			// The outcome's entry is written once the call ends.
			_ = tx.Rollback(context.Background())
		})
		check(t, q, err)
		var pending int
		if err := s.Pool().QueryRow(base, `SELECT count(*) FROM pgbus.audit_log WHERE pending`).Scan(&pending); err != nil || pending != 0 {
			t.Fatalf("pending audit entries: %d, %v; want none: the start entry was refused", pending, err)
		}
	})
}
