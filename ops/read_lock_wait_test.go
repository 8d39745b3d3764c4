package ops_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// longCallTimeout is a call bound no test waits out: a read that waited
// for a lock until it would fail by the test's own deadline, not with the
// error of a read that waited its lock bound.
const longCallTimeout = 10 * time.Minute

// Reads of a DLQ whose table another session holds locked (a LOCK TABLE,
// a VACUUM FULL, an ALTER) give up after their short wait for the lock,
// far inside the call's bound, and say which table, which session holds
// it and since when, and what to do, rather than keeping the caller and a
// connection of the pool for the whole bound. Once the lock goes, they
// read again.
func TestReadOfALockedDLQSaysWhoHoldsTheLock(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: longCallTimeout})
	ctx := testContext(t)
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q+"_dlq")

	held := fmt.Sprintf("pgmq.q_%s_dlq in AccessExclusiveLock by pid %d (idle in transaction, in a transaction since ", q, lock.PID)
	end := fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID)
	reads := map[string]func() error{
		"list": func() error {
			_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
			return err
		},
		"show": func() error { _, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]}); return err },
		"summary": func() error {
			_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
			return err
		},
	}
	for name, read := range reads {
		err := read()
		if err == nil {
			t.Fatalf("%s of a DLQ held locked: no error", name)
		}
		msg := err.Error()
		for _, want := range []string{"waited " + ops.DefaultReadLockWait.String() + " for a lock another session holds", held, end, "pg_stat_activity", "pg_locks"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s of a DLQ held locked: %v; want it to say %q", name, err, want)
			}
		}
		if strings.Contains(msg, "database call timeout") || strings.Contains(msg, "did not answer") || strings.Contains(msg, "lock_timeout, set for the role") {
			t.Errorf("%s of a DLQ held locked: %v; want the wait for the lock, not the call's bound, an outage or a DBA's setting", name, err)
		}
		if k := ops.ErrorKind(err); k != ops.KindUnavailable {
			t.Errorf("%s of a DLQ held locked: kind %s; want unavailable", name, k)
		}
		for _, n := range ops.NextSteps(err) {
			if n.Op == ops.OpHealth {
				t.Errorf("%s of a DLQ held locked: next steps %+v hold the health check, which would say OK", name, ops.NextSteps(err))
			}
		}
	}

	lock.Release()
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("the list once the lock went: %d items, %v; want the 3 dead messages", len(page.Items), err)
	}
}

// Reads that wait for a lock on one DLQ's table, as many as fill the
// process's pool and more (browser tabs, an agent's parallel calls), do
// not keep a worker of another queue from its connections: its message
// is processed while they go on asking.
func TestWorkerRunsWhileReadsWaitForALockOnAnotherQueue(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const poolSize = 4
	s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "pool_max_conns", fmt.Sprint(poolSize)))
	locked := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, locked, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	other := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: longCallTimeout})

	var ran atomic.Bool
	c := pgtest.NewClient(t, s, other, nil)
	c.Handle("work", func(ctx context.Context, job *engine.Job) error {
		ran.Store(true)
		return nil
	}, engine.HandlerOptions{})
	pgtest.Send(t, c, other, 1, engine.SendOptions{Kind: "work"})

	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+locked+"_dlq")
	ctx, cancel := context.WithCancel(testContext(t))
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for range 2 * poolSize {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: locked}})
			}
		})
	}
	lock.AwaitWaiting(poolSize)

	pgtest.Start(t, c)
	pgtest.Eventually(t, 90*time.Second, "the worker of another queue to run its job while reads wait for the lock", ran.Load)
}

// A read that waited its lock bound behind an ALTER TABLE or a LOCK TABLE
// queued for its table, itself waiting for a session that holds a lock
// reads do not wait for (a long index build's SHARE lock, or a reader
// idle in its transaction), names both: the one queued ahead of the
// read, and the one it waits for. It named neither, and said the lock was
// on a row or taken a moment ago.
func TestReadQueuedBehindAWaitingLockSaysWhoHoldsItUp(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: longCallTimeout, ReadLockWait: 500 * time.Millisecond})
	ctx := testContext(t)
	build := pgtest.HoldLock(t, pgtest.OpenStore(t, url), "q_"+q+"_dlq") // SHARE, as CREATE INDEX takes
	alter := pgtest.OpenStore(t, url)
	tx, err := alter.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var alterPID int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&alterPID); err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		_, err := tx.Exec(ctx, `LOCK TABLE pgmq.`+"q_"+q+`_dlq IN ACCESS EXCLUSIVE MODE`)
		queued <- err
	}()
	build.AwaitWaiting(1)

	_, err = svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err == nil {
		t.Fatal("a list of a DLQ whose table an ACCESS EXCLUSIVE lock waits for: no error")
	}
	msg := err.Error()
	for _, want := range []string{fmt.Sprintf("pid %d (", alterPID), "itself waiting for the lock", fmt.Sprintf("pid %d (idle in transaction", build.PID), fmt.Sprintf("pg_terminate_backend(%d)", alterPID)} {
		if !strings.Contains(msg, want) {
			t.Errorf("a list queued behind a waiting lock: %v; want it to say %q", err, want)
		}
	}
	build.Release()
	if err := <-queued; err != nil {
		t.Fatalf("the queued LOCK TABLE: %v", err)
	}
}
