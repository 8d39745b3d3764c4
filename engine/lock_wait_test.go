package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// While an outcome write waits after the part of it that set a vt landed
// (a retry written, then a dead letter whose DLQ is locked), the heartbeat
// goes on keeping the other held messages invisible: a job still running,
// and the dead letter waiting to be written, are not read and run again
// when their visibility timeout passes meanwhile.
func TestHeartbeatRunsWhileAnOutcomeWriteWaits(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, st, func(s *store.QueueSettings) {
		s.VisibilityTimeout = 2 * time.Second
		s.RetryBackoff, s.RetryBackoffMax = time.Hour, time.Hour
	})
	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cfg.DatabaseCallTimeout = engine.MinDatabaseCallTimeout
	})
	var mu sync.Mutex
	runs := map[string]int{}
	gate, keepRunning := make(chan struct{}), make(chan struct{})
	c.HandleQueue(q, func(ctx context.Context, j *engine.Job) error {
		var p struct{ Job string }
		if err := j.Decode(&p); err != nil {
			return err
		}
		mu.Lock()
		runs[p.Job]++
		mu.Unlock()
		switch p.Job {
		case "succeed":
			return nil
		case "retry":
			<-gate
			return errors.New("upstream 503")
		case "dead":
			<-gate
			return engine.NonRetryable(errors.New("bad input"))
		default: // "running": runs through the whole wait
			select {
			case <-keepRunning:
			case <-ctx.Done():
			}
			return nil
		}
	})
	ranOnce := func(when string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for _, job := range []string{"succeed", "retry", "dead", "running"} {
			if runs[job] != 1 {
				t.Fatalf("%s: job %s ran %d times, want once (runs: %v)", when, job, runs[job], runs)
			}
		}
	}
	// Each try of a write that waits for a lock past its call timeout is
	// logged, at warn once a minute and at debug between.
	failedWrites := func() int { return strings.Count(logs.String(), "writing outcomes waits for a lock") }

	// The success's write waits for the archive, so that the retry and
	// the dead letter, finished meanwhile, are written together after it.
	archive := pgtest.HoldLock(t, st, "a_"+q)
	dlq := lockDLQ(t, st, store.DLQName(q))
	for _, job := range []string{"succeed", "retry", "dead", "running"} {
		pgtest.Send(t, c, q, map[string]string{"job": job}, engine.SendOptions{})
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the success's write to wait for the archive", func() bool { return failedWrites() >= 1 })
	close(gate)
	pgtest.Eventually(t, time.Minute, "the retry and the dead letter to be waiting", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return runs["retry"] == 1 && runs["dead"] == 1
	})
	// One more failed try of the success after both returned: their
	// outcomes wait behind it, and go in the next batch together.
	n := failedWrites()
	pgtest.Eventually(t, time.Minute, "one more try of the success's write", func() bool { return failedWrites() > n })
	archive.Release()
	pgtest.Eventually(t, time.Minute, "the retry to be written", func() bool {
		return len(failures(t, st, q, firstIDOf(t, st, q, "retry"))) == 1
	})
	// The dead letter waits for the DLQ for three visibility timeouts.
	n = failedWrites()
	pgtest.Eventually(t, time.Minute, "the dead letter's write to wait for its DLQ", func() bool { return failedWrites() >= n+6 })
	ranOnce("while the dead letter waited")
	// The log says who holds the lock and how to end it, not that the
	// database does not answer.
	for _, l := range []*pgtest.HeldLock{archive, dlq} {
		if want := fmt.Sprintf("pg_terminate_backend(%d)", l.PID); !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %s:\n%s", want, logs.String())
		}
	}
	// The success's write named the archive's lock alone, not the DLQ's,
	// which did not hold it.
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "writing outcomes waits for a lock") {
			if strings.Contains(line, fmt.Sprintf("pg_terminate_backend(%d)", dlq.PID)) || strings.Contains(line, "_dlq in ") {
				t.Errorf("the success's wait names the DLQ's lock: %s", line)
			}
			break
		}
	}
	if text := logs.String(); strings.Contains(text, "does not answer") || !strings.Contains(text, "level=WARN msg=\"pgbus: writing outcomes waits for a lock") ||
		!strings.Contains(text, `held_by="pgmq.a_`+q+` in ShareLock by pid`) {
		t.Errorf("the log of the writes that waited for locks:\n%s", text)
	}
	dlq.Release()
	pgtest.Eventually(t, time.Minute, "the dead letter to be written", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+store.DLQName(q)+`"`) == 1
	})
	close(keepRunning)
	pgtest.Eventually(t, time.Minute, "the running job's success to be written", func() bool { return pgtest.Archived(t, st, q) == 2 })
	ranOnce("at the end")
}

// firstIDOf returns the id of queue's message whose payload's job is job.
func firstIDOf(t *testing.T, st *store.Store, queue, job string) int64 {
	t.Helper()
	return int64(pgtest.Int(t, st, `SELECT msg_id::int FROM pgmq."q_`+queue+`" WHERE message->>'job' = $1`, job))
}

// A read, and an extension of the running jobs' visibility timeout, that
// wait for another session's lock on the queue's table past their call
// timeout (a VACUUM FULL, a LOCK TABLE) are logged as such, naming the
// session and the statement that ends it, not as the database not
// answering; the queue is worked once the lock goes.
func TestReadWaitingForALockSaysWhoHoldsIt(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, st, nil)
	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		// Long enough that no call waiting for no lock goes unanswered
		// on a busy machine (at the least, one second, one did, and the
		// log rightly said the database did not answer).
		cfg.DatabaseCallTimeout = 5 * time.Second
	})
	job := newLongJob()
	c.HandleQueue(q, job.handle, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Start(t, c)
	<-job.running
	lock := pgtest.HoldLock(t, st, "q_"+q) // the reads go on, finding nothing to read
	pgtest.Eventually(t, time.Minute, "the read and the heartbeat to wait for the lock", func() bool {
		text := logs.String()
		return strings.Contains(text, "reading the queue waits for a lock") && strings.Contains(text, "extending the visibility timeout of the running jobs waits for a lock")
	})
	want := fmt.Sprintf("pg_terminate_backend(%d)", lock.PID)
	if text := logs.String(); !strings.Contains(text, want) || !strings.Contains(text, `held_by="pgmq.q_`+q+` in ShareLock by pid`) ||
		strings.Contains(text, "does not answer") {
		t.Fatalf("the log of a read and a heartbeat waiting for a lock; want it to name the lock and %s, not an outage:\n%s", want, text)
	}
	lock.Release()
	close(job.finish)
	pgtest.Eventually(t, time.Minute, "the job's success to be written once the lock went", func() bool { return pgtest.Archived(t, st, q) == 1 })
	if n := job.runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times, want once", n)
	}
}

// After its reads failed for longer than the visibility timeout (here for
// a lock on the queue's table; an outage does the same), a running job's
// message is visible again: the worker extends its held claims before its
// next read, rather than read the message and run the job a second time
// beside the first. The heartbeat is held back meanwhile, so that only
// that extension can keep the message.
func TestReadAfterFailedReadsKeepsRunningJobs(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, st, func(qs *store.QueueSettings) { qs.VisibilityTimeout = 2 * time.Second })
	var heartbeatHeld atomic.Bool
	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.DatabaseCallTimeout = engine.MinDatabaseCallTimeout
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		engine.HoldHeartbeat(cfg, heartbeatHeld.Load)
	})
	job := newLongJob()
	c.HandleQueue(q, job.handle, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Start(t, c)
	<-job.running
	count := func(where string) int {
		return pgtest.Int(t, st, `SELECT count(*)::int FROM pgmq."q_`+q+`" WHERE `+where)
	}

	lock := pgtest.HoldLock(t, st, "q_"+q) // reads and extensions wait, and fail at their call timeout
	heartbeatHeld.Store(true)
	pgtest.Eventually(t, time.Minute, "a read to fail, and the running job's message to turn visible", func() bool {
		return strings.Contains(logs.String(), "reading the queue waits for a lock") && count("vt <= clock_timestamp()") == 1
	})
	lock.Release()
	// Left visible, any worker, of this process or another, would read the
	// message and run the job again.
	pgtest.Eventually(t, 30*time.Second, "the running job's message to be made invisible again once the lock went", func() bool {
		return count("vt > clock_timestamp()") == 1
	})
	readAgain := count("read_ct > 1")
	heartbeatHeld.Store(false)
	close(job.finish)
	pgtest.Eventually(t, time.Minute, "the job's success to be written", func() bool { return pgtest.Archived(t, st, q) == 1 })
	if n := job.runs.Load(); n != 1 || readAgain != 0 {
		t.Fatalf("the job ran %d times (its message read again: %v); want once: the claim extended before the next read", n, readAgain == 1)
	}
}

// longJob is a handler that runs until finish is closed, counting its
// runs; running is closed as the first begins.
type longJob struct {
	runs            atomic.Int32
	running, finish chan struct{}
}

func newLongJob() *longJob {
	return &longJob{running: make(chan struct{}), finish: make(chan struct{})}
}

func (j *longJob) handle(ctx context.Context, _ *engine.Job) error {
	if j.runs.Add(1) == 1 {
		close(j.running)
	}
	select {
	case <-j.finish:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
