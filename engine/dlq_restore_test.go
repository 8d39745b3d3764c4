package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// dlqCount counts the messages in queue's DLQ, -1 while it does not exist.
func dlqCount(t *testing.T, s *store.Store, queue string) int {
	t.Helper()
	if ok, err := s.QueueExists(testContext(t), store.DLQName(queue)); err != nil || !ok {
		return -1
	}
	return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+store.DLQName(queue)+`"`)
}

// deadOrOK is a handler that fails kind "bad" for good, counting its runs,
// and succeeds at the rest.
func deadOrOK(bad *atomic.Int32) engine.HandlerFunc {
	return func(_ context.Context, job *engine.Job) error {
		if job.Kind == "bad" {
			bad.Add(1)
			return engine.NonRetryable(errors.New("bad input"))
		}
		return nil
	}
}

// startThenDropDLQ runs c, waits for it to work queue, then drops the
// queue's DLQ as PGMQ's drop_queue does, as owner.
// Its messages are sent at priority 0, to physical.
func startThenDropDLQ(t *testing.T, c *engine.Client, s, owner *store.Store, queue, physical string) {
	t.Helper()
	pgtest.Start(t, c)
	pgtest.Send(t, c, queue, 0, engine.SendOptions{Kind: "ok"})
	pgtest.Eventually(t, 30*time.Second, "the worker to run", func() bool { return pgtest.Archived(t, s, physical) == 1 })
	pgtest.DropOutside(t, owner, store.DLQName(queue))
}

// A DLQ dropped by hand while workers run is made again, empty, as a worker
// makes a missing one at start: the messages to dead-letter then (one that
// failed for good, one of a kind nobody handles, routed as it is read) go
// to it, where the writes were retried without end and held up the
// queue's other outcomes, and with them its heartbeat.
func TestDLQDroppedWhileWorkingIsMadeAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	plain, levels := newQueue(t, s, nil), newPriorityQueue(t, s, 2)
	for name, qs := range map[string][2]string{"plain": {plain, plain}, "priority levels": {levels, store.PriorityQueueName(levels, 0)}} {
		q, physical := qs[0], qs[1]
		t.Run(name, func(t *testing.T) {
			var logs pgtest.SyncBuffer
			c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			var bad atomic.Int32
			c.Handle("bad", deadOrOK(&bad))
			c.Handle("ok", deadOrOK(&bad))
			startThenDropDLQ(t, c, s, s, q, physical)
			pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "bad"})
			pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "nobody"})
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(logs.String())
				}
			})
			pgtest.Eventually(t, 30*time.Second, "both messages in the DLQ made again", func() bool { return dlqCount(t, s, q) == 2 })
			pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "ok"})
			pgtest.Eventually(t, 30*time.Second, "the queue emptied", func() bool { return pgtest.Live(t, s, physical) == 0 && pgtest.Archived(t, s, physical) == 2 })
			if !strings.Contains(logs.String(), "made it again, empty") {
				t.Errorf("the log does not say the DLQ was made again:\n%s", logs.String())
			}
		})
	}
}

// A DLQ dropped by hand that the workers' role may not make again leaves
// the messages to dead-letter in the queue, to come back after their
// visibility timeout, with the failure of the one that ran recorded, and
// the log says what to run; the queue's other messages run meanwhile. Once
// the DLQ is made, they reach it: nothing is lost.
func TestDLQThatCannotBeMadeAgainLeavesItsMessagesQueued(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := newQueue(t, owner, nil)
	role, roleURL := pgtest.NewRole(t, url)
	grant := func() {
		pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
		pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
		pgtest.Exec(t, url, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	}
	grant()
	s := pgtest.OpenStore(t, roleURL)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	var bad atomic.Int32
	c.Handle("bad", deadOrOK(&bad))
	c.Handle("ok", deadOrOK(&bad))
	startThenDropDLQ(t, c, s, owner, q, q)

	badID := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "bad"})
	pgtest.Eventually(t, 30*time.Second, "the bad message to run", func() bool { return bad.Load() >= 1 })
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "nobody"})
	pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "ok"})
	pgtest.Eventually(t, 30*time.Second, "the good message to be archived beside them", func() bool { return pgtest.Archived(t, owner, q) == 2 })
	if n := pgtest.Live(t, owner, q); n != 2 {
		t.Fatalf("%d messages left in the queue, want the 2 to dead-letter", n)
	}
	if want := "create the queue again as a role that may create tables"; !strings.Contains(logs.String(), want) || strings.Contains(logs.String(), "pgbus queue") {
		t.Errorf("the log does not say %q:\n%s", want, logs.String())
	}
	if fs := failures(t, owner, q, badID); len(fs) == 0 || fs[0].Message != "bad input" {
		t.Errorf("failure history of the message left in the queue: %+v; want its failure recorded", fs)
	}

	if err := owner.CreateDLQ(testContext(t), q); err != nil {
		t.Fatal(err)
	}
	grant()
	pgtest.Eventually(t, 30*time.Second, "both messages in the DLQ once it is made", func() bool { return dlqCount(t, owner, q) == 2 })
	if n := pgtest.Live(t, owner, q); n != 0 {
		t.Errorf("%d messages left in the queue, want none", n)
	}
}

// A worker starting on a queue of priority levels whose DLQ was dropped by
// hand makes it again, as it does for a plain queue, where it refused to
// start, saying to create a queue that exists.
func TestWorkerStartMakesAMissingDLQOfPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newPriorityQueue(t, s, 2)
	pgtest.DropOutside(t, s, store.DLQName(q))
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("bad", deadOrOK(new(atomic.Int32)))
	stop, done := runInBackground(c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "bad"})
	pgtest.Eventually(t, 30*time.Second, "the message in the DLQ made at start", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run: %v", err)
		default:
		}
		return dlqCount(t, s, q) == 1
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// restoreHeldUp runs a client of queue q, logging to logs, drops the
// queue's DLQ by hand once the client works the queue, and holds, in a
// transaction of its own, the lock on the queue's name that making the DLQ
// again takes, until release; then it sends a message that is routed to
// the DLQ as it is read, and returns once the worker's making of the DLQ
// again waits for that lock, with the pid of the session that waits.
func restoreHeldUp(t *testing.T, s *store.Store, q string) (logs *pgtest.SyncBuffer, stop, release func(), waiter int) {
	t.Helper()
	ctx := testContext(t)
	logs = new(pgtest.SyncBuffer)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	var bad atomic.Int32
	c.Handle("ok", deadOrOK(&bad))
	stop = pgtest.Start(t, c)
	pgtest.Send(t, c, q, 0, engine.SendOptions{Kind: "ok"})
	pgtest.Eventually(t, 30*time.Second, "the worker to run", func() bool { return pgtest.Archived(t, s, q) == 1 })
	pgtest.DropOutside(t, s, store.DLQName(q))

	hold, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = hold.Rollback(context.Background()) }
	t.Cleanup(release)
	var holder int
	if err := hold.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT pg_advisory_xact_lock(hashtext('pgbus.queue:' || $1))) l`, q).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "nobody"}) // routed to the DLQ as it is read
	pgtest.Eventually(t, 30*time.Second, "the DLQ's create to wait for the queue name's lock", func() bool {
		waiter = pgtest.Int(t, s, `SELECT coalesce(min(pid), 0) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder)
		return waiter != 0
	})
	return logs, stop, release, waiter
}

// logLine returns the first line of logs that holds text, "" if none.
func logLine(logs fmt.Stringer, text string) string {
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, text) {
			return line
		}
	}
	return ""
}

// A stop that comes while a worker makes its queue's dropped DLQ again
// (its create waits for another session's lock on the queue's name) logs
// that the stop came, with the messages to dead-letter left in the queue:
// no ERROR blaming the role's privileges, which the stop's cut create
// read as, and nothing lost.
func TestStopWhileMakingTheDLQAgainIsNoPrivilegeError(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnStore(t) // the lock's holder and its waiter take two connections
	q := newQueue(t, s, nil)
	logs, stop, release, _ := restoreHeldUp(t, s, q)
	stop()
	release()
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "a stop came while") {
		t.Errorf("a stop while the DLQ was made again; want it said, and no ERROR:\n%s", logs.String())
	}
	wantKept(t, s, q)
}

// A worker's making again of its queue's dropped DLQ that runs past its
// 30s bound (another session holds the lock on the queue's name) is
// logged as a warning that says so: not as the database out of reach,
// which it was not, nor as an ERROR blaming the role's privileges. The
// message to dead-letter stays in the queue.
func TestMakingTheDLQAgainPastItsBoundIsSaidSo(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnStore(t) // the lock's holder and its waiter take two connections
	q := newQueue(t, s, nil)
	logs, stop, release, _ := restoreHeldUp(t, s, q)
	const past = "making it again took longer than 30s"
	pgtest.Eventually(t, 3*time.Minute, "the worker to give up making the DLQ again", func() bool {
		return strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "could not be reached") ||
			strings.Contains(logs.String(), past)
	})
	stop()
	release()
	if line := logLine(logs, past); !strings.Contains(line, "level=WARN") || strings.Contains(logs.String(), "level=ERROR") ||
		strings.Contains(logs.String(), "could not be reached") {
		t.Errorf("the DLQ's making again ran past its bound; want a warning that says so, and neither an ERROR nor the database said out of reach:\n%s", logs.String())
	}
	wantKept(t, s, q)
}

// An outage while a worker makes its queue's dropped DLQ again (here its
// session is ended as the server's restart ends it) is logged as a
// warning that the database could not be reached: not as an ERROR blaming
// the role's privileges, nor as a create that ran past its time. The
// message to dead-letter stays in the queue.
func TestOutageWhileMakingTheDLQAgainIsSaidSo(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnStore(t) // the lock's holder and its waiter take two connections
	q := newQueue(t, s, nil)
	logs, stop, release, waiter := restoreHeldUp(t, s, q)
	var ended bool
	if err := s.Pool().QueryRow(testContext(t), `SELECT pg_terminate_backend($1)`, waiter).Scan(&ended); err != nil || !ended {
		t.Fatalf("end the session of the DLQ's create, pid %d: %v, %v", waiter, ended, err)
	}
	const unreachable = "the database could not be reached to make it again"
	pgtest.Eventually(t, time.Minute, "the worker to give up making the DLQ again", func() bool {
		return strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), unreachable) ||
			strings.Contains(logs.String(), "took longer than")
	})
	stop()
	release()
	if line := logLine(logs, unreachable); !strings.Contains(line, "level=WARN") || strings.Contains(logs.String(), "level=ERROR") ||
		strings.Contains(logs.String(), "took longer than") {
		t.Errorf("the DLQ's create's session ended; want a warning that the database could not be reached, and neither an ERROR nor a create past its time:\n%s", logs.String())
	}
	wantKept(t, s, q)
}

// wantKept fails the test unless queue q still holds its one message to
// dead-letter.
func wantKept(t *testing.T, s *store.Store, q string) {
	t.Helper()
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages in the queue, want the one to dead-letter kept", n)
	}
}
