package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A handler running longer than the visibility timeout keeps its message:
// the heartbeat extends vt, so no other reader gets it meanwhile.
func TestHeartbeatKeepsLongJobsInvisible(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second })
	c := pgtest.NewClient(t, s, q, nil)
	release := make(chan struct{})
	running := make(chan struct{}, 1)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		running <- struct{}{}
		<-release
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	<-running
	firstVT := vtOf(t, s, q, id)
	last, extended := firstVT, 0
	// A second reader tries all along, until the visibility timeout of the
	// first read has passed and heartbeats have extended it three times.
	pgtest.Eventually(t, time.Minute, "three heartbeats past the first visibility timeout", func() bool {
		got, err := s.Read(ctx, q, time.Second, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("message %d was handed to a second reader while its handler ran", got[0].ID)
		}
		if vt := vtOf(t, s, q, id); vt.After(last) {
			last, extended = vt, extended+1
		}
		return extended >= 3 && dbNow(t, s).After(firstVT)
	})
	close(release)
	pgtest.Eventually(t, 20*time.Second, "the message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	if n := pgtest.Int(t, s, `SELECT read_ct FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); n != 1 {
		t.Fatalf("read_ct = %d, want 1", n)
	}
}

// A visibility timeout shortened while the workers run (30s to 1s) applies
// to the heartbeat at once: a job running longer than the new timeout
// keeps its message, where the heartbeat used to wait out a third of the
// old timeout while reads claimed with the new one, and the message ran
// again beside its first run.
func TestShorterVisibilityTimeoutWhileRunning(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = 30 * time.Second })
	c := pgtest.NewClient(t, s, q, nil)
	claimed := make(chan float64, 1)
	c.Handle("claim", func(ctx context.Context, job *engine.Job) error {
		var left float64
		if err := s.Pool().QueryRow(ctx, `SELECT extract(epoch FROM vt - clock_timestamp())::float8 FROM pgmq."q_`+q+`" WHERE msg_id = $1`, job.ID).Scan(&left); err != nil {
			return engine.NonRetryable(err)
		}
		claimed <- left
		return nil
	})
	var slow overlap
	c.Handle("slow", func(ctx context.Context, job *engine.Job) error {
		defer slow.enter()()
		time.Sleep(4 * time.Second) // four of the new visibility timeouts
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Start(t, c)
	// claimedFor sends a job that reports how long its read hid it.
	claimedFor := func() float64 {
		pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "claim"})
		select {
		case left := <-claimed:
			return left
		case <-time.After(30 * time.Second):
			t.Fatal("the claim job did not run")
			return 0
		}
	}
	// A first job run under the old timeout: the heartbeat is under way.
	if left := claimedFor(); left < 10 {
		t.Fatalf("claimed for %.1fs under a 30s visibility timeout", left)
	}
	set, err := s.QueueSettingsOf(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	set.VisibilityTimeout = time.Second
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "reads to claim with the new 1s timeout", func() bool { return claimedFor() <= 1 })
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "slow"})
	pgtest.Eventually(t, 30*time.Second, "the slow job archived", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE headers->>'pgbus_kind' = 'slow'`) == 1
	})
	if slow.calls.Load() != 1 || slow.most.Load() != 1 {
		t.Fatalf("the slow job ran %d times, %d at once; want once", slow.calls.Load(), slow.most.Load())
	}
}

// A visibility timeout made longer while a job runs (1s to 1 minute) only
// lengthens its claim once the heartbeat extends it with the new one: the
// next extension stays due by the old timeout, where it waited a third of
// the new one and the message reappeared and ran again meanwhile.
func TestLongerVisibilityTimeoutWhileRunning(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second })
	c := pgtest.NewClient(t, s, q, nil)
	started := make(chan struct{}, 4)
	var slow overlap
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		defer slow.enter()()
		started <- struct{}{}
		time.Sleep(5 * time.Second) // five of the old timeouts
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start")
	}
	set, err := s.QueueSettingsOf(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	set.VisibilityTimeout = time.Minute
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the job archived", func() bool { return pgtest.Archived(t, s, q) >= 1 })
	if slow.calls.Load() != 1 || slow.most.Load() != 1 {
		t.Fatalf("the job ran %d times, %d at once; want once", slow.calls.Load(), slow.most.Load())
	}
}

// A configured heartbeat interval past the queue's visibility timeout
// (1 minute against 1s) is cut to a third of the timeout: the claim of a
// job running for several timeouts never expires, where the message used
// to reappear and run again after 1s.
func TestVisibilityHeartbeatLongerThanTimeout(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second })
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.VisibilityHeartbeat = time.Minute })
	var slow overlap
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		defer slow.enter()()
		time.Sleep(3 * time.Second)
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the job archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	if slow.calls.Load() != 1 || slow.most.Load() != 1 {
		t.Fatalf("the job ran %d times, %d at once; want once", slow.calls.Load(), slow.most.Load())
	}
}

// Stopping lets running handlers finish and writes their outcomes.
func TestGracefulShutdownDrains(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	// A drain timeout no loaded machine reaches: the drain ends because
	// the handlers did.
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.DrainTimeout = 2 * time.Minute })
	started, release := make(chan struct{}, 4), make(chan struct{})
	c.HandleQueue(q, held(started, release), engine.HandlerOptions{Timeout: time.Minute})
	stop, done := runInBackground(c)
	defer stop()
	for i := range 4 {
		pgtest.Send(t, c, q, i, engine.SendOptions{})
	}
	for range 4 {
		<-started
	}
	// The handlers finish only after the stop: Run must wait for them.
	stop()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("Run did not return after its handlers finished")
	}
	if n := pgtest.Archived(t, s, q); n != 4 {
		t.Fatalf("after stop %d messages archived, want the 4 that were running", n)
	}
}

// Past the drain timeout, running jobs are cancelled and given back, not
// failed: their attempts do not count (a deploy uses up no retries). A
// job whose handler returns on the cancellation is visible again at once,
// for the workers that replace these; one whose handler ignores it waits
// out its visibility timeout, as the handler may still act on it; one
// whose handler returns success then is done.
func TestDrainTimeoutGivesJobsBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Minute })
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.DrainTimeout = 100 * time.Millisecond })
	started := make(chan struct{}, 3)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.Handle("honours", func(ctx context.Context, job *engine.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}, engine.HandlerOptions{Timeout: time.Minute})
	c.Handle("ignores", func(ctx context.Context, job *engine.Job) error {
		started <- struct{}{}
		<-release
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	c.Handle("finishes", func(ctx context.Context, job *engine.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	stop := pgtest.Start(t, c)
	honours := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "honours"})
	ignores := pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "ignores"})
	finishes := pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "finishes"})
	for range 3 {
		<-started
	}
	stop()
	for _, id := range []int64{honours, ignores} {
		if n := len(failures(t, s, q, id)); n != 0 {
			t.Errorf("message %d has %d failures after the stop; want none: the stop cut it off, it did not fail", id, n)
		}
		if n := pgtest.Int(t, s, `SELECT read_ct FROM pgmq."q_`+q+`" WHERE msg_id = $1`, id); n != 0 {
			t.Errorf("message %d: read_ct %d after the stop; want 0: the cut-off attempt given back", id, n)
		}
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND vt <= now()`, honours); n != 1 {
		t.Error("the job whose handler returned on the stop is hidden; want it visible at once")
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND vt > now() + interval '30 seconds'`, ignores); n != 1 {
		t.Error("the job whose handler ignored the stop is visible; want it hidden for its visibility timeout")
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, finishes); n != 1 {
		t.Error("the job whose handler returned success on the stop is not archived")
	}
}

// A queue dropped while one of its jobs runs leaves the job's outcome
// nowhere to go: the writer says so once and gives it up, and a stop
// returns as soon as the handler does, where the writer retried the write
// until a hard stop that never came (the handler finished within the drain
// timeout), and Run never returned.
func TestStopAfterQueueDroppedDuringJob(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	// A drain timeout the test never reaches: Run returns because the
	// outcome was given up, not because the drain timed out.
	c, logs := loggedClient(t, s, q, slog.LevelInfo, func(cfg *engine.Config) { cfg.DrainTimeout = 5 * time.Minute })
	running, release := make(chan struct{}, 1), make(chan struct{})
	c.HandleQueue(q, held(running, release), engine.HandlerOptions{Timeout: time.Minute})
	stop, done := runInBackground(c)
	defer stop()
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	<-running
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	stop()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Run has not returned a minute after its context ended and its handler returned; log:\n%s", logs.String())
	}
	out := logs.String()
	if n := strings.Count(out, "the queue was dropped while its jobs ran"); n != 1 || strings.Contains(out, "writing outcomes failed") {
		t.Fatalf("the dropped queue was reported %d times, or its write retried; want one report, no retry; log:\n%s", n, out)
	}
}

// The writer of outcomes retries a write that fails while the worker runs
// (its connection lost, as in a database restart), so the job does not run
// twice; at a stop it gives up a write the database does not answer (here a
// lock holds it) a few seconds past the drain timeout, leaving the message
// in the queue to run again, where Run waited for it forever.
func TestOutcomeWritesRetriedUntilTheDrainTimeout(t *testing.T) {
	t.Parallel()
	s, q, c, logs := lockableClient(t, "pgbus_writes", 2*time.Second)
	var calls atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error { calls.Add(1); return nil })
	stop, done := runInBackground(c)
	defer stop()

	lock := pgtest.HoldLock(t, s, "a_"+q)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the first outcome's write to wait for the lock", func() bool { return len(lock.Waiting()) == 1 })
	endWaiting(t, s, lock)
	lock.Release()
	pgtest.Eventually(t, time.Minute, "the first job archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	// The terminated connection is logged as the database not answering,
	// and its end as it answering again, once the retried write committed.
	pgtest.Eventually(t, time.Minute, "the log to say the database answers again", func() bool {
		return strings.Contains(logs.String(), "the database answers again")
	})
	if n := calls.Load(); n != 1 {
		t.Fatalf("the first job ran %d times; want once, its write retried; log:\n%s", n, logs.String())
	}

	lock = pgtest.HoldLock(t, s, "a_"+q)
	second := pgtest.Send(t, c, q, 2, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the second outcome's write to wait for the lock", func() bool { return len(lock.Waiting()) == 1 })
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("Run has not returned 25s after its context ended (drain timeout 2s); log:\n%s", logs.String())
	}
	// Giving up cancels the statement; the server acts on the cancel when
	// it gets to it, and a lock released before that would let the write
	// land after all.
	pgtest.Eventually(t, time.Minute, "the given-up write to stop waiting for the lock", func() bool { return len(lock.Waiting()) == 0 })
	lock.Release()
	if pgtest.Archived(t, s, q) != 1 || pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND read_ct = 1`, second) != 1 {
		t.Fatalf("archived %d, live %d; want the second message still in the queue, read once", pgtest.Archived(t, s, q), pgtest.Live(t, s, q))
	}
}

func TestPausedQueueIsNotRead(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q, other := newQueue(t, s, nil), newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: other, Concurrency: 1})
	})
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { calls.Add(1); return nil })
	c.HandleQueue(other, func(ctx context.Context, job *engine.Job) error { return nil })
	if changed, err := s.SetPaused(ctx, q, true); err != nil || !changed {
		t.Fatalf("pause: %v %v", changed, err)
	}
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	// A message the other queue gets without a notification is found by
	// polling: once it is done, the client has polled since the send.
	insertWithoutNotify(t, s, other)
	pgtest.Eventually(t, time.Minute, "the other queue's message to be polled and archived", func() bool { return pgtest.Archived(t, s, other) == 1 })
	if calls.Load() != 0 || pgtest.Live(t, s, q) != 1 {
		t.Fatalf("a paused queue was worked: calls=%d", calls.Load())
	}
	if changed, err := s.SetPaused(ctx, q, false); err != nil || !changed {
		t.Fatalf("resume: %v %v", changed, err)
	}
	pgtest.Eventually(t, 20*time.Second, "the message to be archived after resume", func() bool { return pgtest.Archived(t, s, q) == 1 })
}

// A send notifies in its transaction: with polling effectively off, the
// message is still picked up at once.
func TestNotificationWakesIdleWorker(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := startListening(t, q, time.Hour)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the notified message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
}

// A message written by another PGMQ client (no notification) is found by
// polling.
func TestPollingFindsMessagesWithoutNotification(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	startListening(t, q, 50*time.Millisecond)
	insertWithoutNotify(t, s, q)
	pgtest.Eventually(t, 20*time.Second, "the polled message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
}

// startListening starts a client of queue with a no-op handler on a store
// of its own and returns once its notification listener is connected: the
// client's first read, of the empty queue, is then behind it or under way.
func startListening(t *testing.T, queue string, poll time.Duration) *engine.Client {
	t.Helper()
	app := uniqueName("pgbus_listen")
	c := pgtest.NewClient(t, pgtest.OpenNamedStore(t, app), queue, func(cfg *engine.Config) { cfg.PollInterval = poll })
	c.HandleQueue(queue, func(ctx context.Context, job *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the client's listener to connect", func() bool { return len(listenerPIDs(t, testStore(t), app)) == 1 })
	return c
}

// insertWithoutNotify writes a message into queue as another PGMQ client
// would, without the notification a pgbus send makes.
func insertWithoutNotify(t *testing.T, s *store.Store, queue string) {
	t.Helper()
	if _, err := s.Pool().Exec(testContext(t), `INSERT INTO pgmq."q_`+queue+`" (vt, message) VALUES (now(), '{"from":"pgmq"}')`); err != nil {
		t.Fatal(err)
	}
}

// vtOf returns the visibility timeout of message id of queue.
func vtOf(t *testing.T, s *store.Store, queue string, id int64) time.Time {
	t.Helper()
	var vt time.Time
	if err := s.Pool().QueryRow(testContext(t), `SELECT vt FROM pgmq."q_`+queue+`" WHERE msg_id = $1`, id).Scan(&vt); err != nil {
		t.Fatalf("the visibility timeout of message %d: %v", id, err)
	}
	return vt
}

// dbNow returns the database server's clock, which visibility timeouts
// follow.
func dbNow(t *testing.T, s *store.Store) time.Time {
	t.Helper()
	var now time.Time
	if err := s.Pool().QueryRow(testContext(t), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// Killing every server connection of the client (pool and listener) loses
// nothing: the worker reconnects and later messages are processed, by
// notification again. Only the connections of the client's own store are
// terminated, found by their application_name: the test's other
// connections, and other tests', are left alone.
func TestReconnectAfterLostConnections(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	app := uniqueName("pgbus_reconnect")
	cs := pgtest.OpenNamedStore(t, app)
	q := newQueue(t, s, nil)
	// Polling is off: after the kill only a reconnected listener delivers.
	c := pgtest.NewClient(t, cs, q, func(cfg *engine.Config) { cfg.PollInterval = time.Hour })
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the client's listener to connect", func() bool { return len(listenerPIDs(t, s, app)) == 1 })
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the first message archived", func() bool { return pgtest.Archived(t, s, q) == 1 })

	// The listener is named before the kill: once its backend is gone,
	// the client may have connected a new one already.
	listener := listenerPIDs(t, s, app)
	if len(listener) != 1 {
		t.Fatalf("listeners %v before the kill; want the one that delivered the first message", listener)
	}
	killed := terminateApp(t, s, app)
	if len(killed) < 2 || !slices.Contains(killed, listener[0]) {
		t.Fatalf("terminated backends %v; want the listener %d and a pool connection", killed, listener[0])
	}
	pgtest.Eventually(t, time.Minute, "a new listener connection", func() bool {
		pids := listenerPIDs(t, s, app)
		return len(pids) == 1 && !slices.Contains(killed, pids[0])
	})
	// Sent through the test's store, whose connections were not touched.
	for i := range 20 {
		if _, err := s.Send(testContext(t), q, store.NewMessage{Payload: json.RawMessage(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, time.Minute, "all messages archived after reconnecting", func() bool { return pgtest.Archived(t, s, q) == 21 })
}

// terminateApp terminates every backend whose application_name is app and
// returns their pids once they are gone.
func terminateApp(t *testing.T, s *store.Store, app string) []int32 {
	t.Helper()
	var pids []int32
	// Materialized, so that nothing but app's backends reaches the
	// terminate call, whatever order the planner picks.
	err := s.Pool().QueryRow(testContext(t), `WITH victims AS MATERIALIZED (
			SELECT pid FROM pg_stat_activity WHERE application_name = $1)
		SELECT coalesce(array_agg(pid), '{}') FROM victims WHERE pg_terminate_backend(pid)`, app).Scan(&pids)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the terminated backends to go", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids) == 0
	})
	return pids
}

// listenerPIDs returns the backends of application app that listen for
// sends.
func listenerPIDs(t *testing.T, s *store.Store, app string) []int32 {
	t.Helper()
	var pids []int32
	err := s.Pool().QueryRow(testContext(t), `SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity
		WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, app).Scan(&pids)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

func TestWorkerRegistry(t *testing.T) {
	t.Parallel()
	// A database of its own: the registry lists the processes of the
	// whole database, those still running first, up to a limit that the
	// other tests' workers, and those their crash tests killed, can fill.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.ProcessHeartbeat = 100 * time.Millisecond })
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { return nil })
	stop := pgtest.Start(t, c)
	find := func() *store.WorkerProcess {
		ws, err := s.ListWorkers(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.ID == c.ID() {
				return &w
			}
		}
		return nil
	}
	pgtest.Eventually(t, time.Minute, "the worker registered", func() bool { return find() != nil })
	first := find().HeartbeatAt
	pgtest.Eventually(t, time.Minute, "a heartbeat", func() bool { return find().HeartbeatAt.After(first) })
	w := find()
	if len(w.Queues) != 1 || w.Queues[0] != q || w.Concurrency != 4 || w.StoppedAt != nil || w.PID == 0 {
		t.Fatalf("registry row = %+v", w)
	}
	stop()
	if w := find(); w.StoppedAt == nil {
		t.Fatal("stopped worker has no stopped_at")
	}
}

func TestStatsCountedPerMinute(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("good", func(ctx context.Context, job *engine.Job) error { return nil })
	c.Handle("bad", func(ctx context.Context, job *engine.Job) error { return errors.New("no") })
	stop := pgtest.Start(t, c)
	for i := range 3 {
		pgtest.Send(t, c, q, i, engine.SendOptions{Kind: "good"})
	}
	pgtest.Send(t, c, q, 9, engine.SendOptions{Kind: "bad"})
	pgtest.Eventually(t, 20*time.Second, "all settled", func() bool { return pgtest.Archived(t, s, q) == 3 && len(deadMessages(t, s, q)) == 1 })
	stop()
	sum := func(kind, col string) int {
		return pgtest.Int(t, s, `SELECT coalesce(sum(`+col+`), 0)::int FROM pgbus.stats_minute WHERE queue_name = $1 AND kind = $2`, q, kind)
	}
	if sum("good", "succeeded") != 3 || sum("good", "latency_count") != 3 || sum("bad", "failed") != 1 || sum("bad", "dead_lettered") != 1 {
		t.Fatalf("stats good: succeeded=%d latency=%d; bad: failed=%d dead=%d",
			sum("good", "succeeded"), sum("good", "latency_count"), sum("bad", "failed"), sum("bad", "dead_lettered"))
	}
	if n := pgtest.Int(t, s, `SELECT coalesce(sum(b), 0)::int FROM pgbus.stats_minute, unnest(latency_buckets) b WHERE queue_name = $1 AND kind = 'good'`, q); n != 3 {
		t.Fatalf("latency buckets hold %d jobs, want 3", n)
	}
}

// An outcome that matches no message, because another read holds it now
// (the claim lapsed while the handler ran), changes nothing and is not
// counted: the worker holding the message counts its own outcome, and the
// stats would count the message twice.
func TestStatsCountOnlyOutcomesWritten(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	started, release := make(chan struct{}, 2), make(chan struct{})
	c.Handle("good", held(started, release))
	c.Handle("bad", func(ctx context.Context, job *engine.Job) error {
		_ = held(started, release)(ctx, job)
		return errors.New("no")
	})
	c.Handle("counted", func(context.Context, *engine.Job) error { return nil })
	stop := pgtest.Start(t, c)
	good := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "good"})
	bad := pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "bad"})
	<-started
	<-started
	// Another worker's read of both, as after their claims lapsed.
	if _, err := s.Pool().Exec(testContext(t), `UPDATE pgmq."q_`+q+`" SET read_ct = read_ct + 1, vt = now() + interval '1 hour'
		WHERE msg_id = ANY($1)`, []int64{good, bad}); err != nil {
		t.Fatal(err)
	}
	close(release)
	pgtest.Send(t, c, q, 3, engine.SendOptions{Kind: "counted"})
	pgtest.Eventually(t, 20*time.Second, "the counted message archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	stop()
	sum := func(col string) int {
		return pgtest.Int(t, s, `SELECT coalesce(sum(`+col+`), 0)::int FROM pgbus.stats_minute WHERE queue_name = $1`, q)
	}
	if sum("succeeded") != 1 || sum("failed") != 0 || sum("retried") != 0 {
		t.Fatalf("stats: succeeded=%d failed=%d retried=%d; want only the counted message's success",
			sum("succeeded"), sum("failed"), sum("retried"))
	}
	if live := pgtest.Live(t, s, q); live != 2 {
		t.Fatalf("%d messages live; want both held by the other read, untouched", live)
	}
}

func TestBadConfigIsRejected(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	bad := map[string]engine.Config{
		"bad name":          {Queues: []engine.QueueConfig{{Name: `x"; DROP TABLE pgmq.meta; --`}}},
		"uppercase":         {Queues: []engine.QueueConfig{{Name: "Orders"}}},
		"negative":          {Queues: []engine.QueueConfig{{Name: "orders", Concurrency: -1}}},
		"huge concurrency":  {Queues: []engine.QueueConfig{{Name: "orders", Concurrency: 1 << 30}}},
		"duplicate":         {Queues: []engine.QueueConfig{{Name: "orders"}, {Name: "orders"}}},
		"dlq as work queue": {Queues: []engine.QueueConfig{{Name: "orders_dlq"}}},
	}
	for label, cfg := range bad {
		if _, err := engine.NewClient(s, cfg); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: NewClient = %v, want ErrInvalid", label, err)
		}
	}
	c, err := engine.NewClient(s, engine.Config{Queues: []engine.QueueConfig{{Name: uniqueName("missing")}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(testContext(t)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Run on a missing queue = %v, want ErrNotFound", err)
	}
	empty, _ := engine.NewClient(s, engine.Config{})
	if err := empty.Run(testContext(t)); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Run without queues = %v, want ErrInvalid", err)
	}
	// Validate, called before Run to catch what Run would refuse, says it
	// too: it said nothing, and Run failed only in the background.
	empty.Handle("k", func(context.Context, *engine.Job) error { return nil })
	if err := empty.Validate(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "list them in Config.Queues") {
		t.Fatalf("Validate without queues = %v, want ErrInvalid saying to list them in Config.Queues", err)
	}
}

func TestSendRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	ctx := testContext(t)
	cases := map[string]func() error{
		"unmarshalable payload": func() error { _, err := c.Send(ctx, q, make(chan int), engine.SendOptions{}); return err },
		"reserved header": func() error {
			_, err := c.Send(ctx, q, 1, engine.SendOptions{Headers: map[string]any{"pgbus_dead_letter": 1}})
			return err
		},
		"negative delay": func() error { _, err := c.Send(ctx, q, 1, engine.SendOptions{Delay: -time.Second}); return err },
		"bad queue":      func() error { _, err := c.Send(ctx, "Bad Queue", 1, engine.SendOptions{}); return err },
		"raw not JSON":   func() error { _, err := c.Send(ctx, q, []byte("{"), engine.SendOptions{}); return err },
	}
	for label, fn := range cases {
		if err := fn(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
	if pgtest.Live(t, s, q) != 0 {
		t.Fatal("bad sends wrote messages")
	}
}

// A kind too long is refused as a kind too long, with its limit: it was
// put in the headers first, and refused as headers too large, naming
// neither the kind nor a limit of its own. Nothing is sent.
func TestSendRefusesAKindTooLongNamingItsLimit(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	c := pgtest.NewClient(t, s, q, nil)
	_, err := c.Send(testContext(t), q, 1, engine.SendOptions{Kind: strings.Repeat("k", 100<<10)})
	want := fmt.Sprintf("kind is %d bytes; at most %d", 100<<10, engine.MaxKindBytes)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "headers") {
		t.Fatalf("send with a 100 KB kind = %v; want ErrInvalid saying %q, not naming the headers", err, want)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("queue %s holds %d messages after the refused send; want none", q, n)
	}
	if _, err := c.Send(testContext(t), q, 1, engine.SendOptions{Kind: strings.Repeat("k", engine.MaxKindBytes)}); err != nil {
		t.Fatalf("send with a kind of %d bytes: %v", engine.MaxKindBytes, err)
	}
}

// A queue's default deadline dead-letters messages older than it with
// deadline_exceeded instead of running them.
func TestQueueDefaultDeadline(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	// A deadline long enough that the message sent without a delay is
	// read within it on a loaded machine too.
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.Deadline = 5 * time.Second })
	c := pgtest.NewClient(t, s, q, nil)
	var calls atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error { calls.Add(1); return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Delay: 6 * time.Second}) // due after its deadline
	pgtest.Send(t, c, q, 2, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "one archived, one dead", func() bool {
		return pgtest.Archived(t, s, q) == 1 && len(deadMessages(t, s, q)) == 1
	})
	if b := deadMessages(t, s, q)[0].Block; b["reason"] != store.ReasonDeadlineExceeded {
		t.Fatalf("block = %v, want deadline_exceeded", b)
	}
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want once (the message within its deadline)", calls.Load())
	}
}

// A running client prunes archives past the queue's retention.
func TestClientRunsRetention(t *testing.T) {
	t.Parallel()
	// A database of its own: on a shared one the pass of any other process
	// (a worker of another package's test starts with one) could prune the
	// row in this client's place, and this client's pass, every 100ms,
	// would prune the rows other tests age on purpose.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q, ids := archivedPastRetention(t, s)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.RetentionInterval = 100 * time.Millisecond })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, 20*time.Second, "the old archive row pruned", func() bool { return pgtest.Archived(t, s, q) == 1 })
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE msg_id = $1`, ids[1]); n != 1 {
		t.Fatal("retention pruned a recent archive row")
	}
}

// The heartbeat never pushes back a message whose retry was just written:
// with a one-hour visibility timeout and a heartbeat every few milliseconds,
// a heartbeat overwriting a zero-delay retry would hide that message for an
// hour, and this test would time out waiting for it.
func TestHeartbeatDoesNotDelayRetries(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) {
		qs.VisibilityTimeout = time.Hour
		qs.RetryBackoff, qs.RetryBackoffMax = 0, 0
	})
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.VisibilityHeartbeat = 2 * time.Millisecond
		cfg.Queues[0].Concurrency = 20
	})
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
		if job.Attempt == 1 {
			return errors.New("transient")
		}
		return nil
	})
	pgtest.Start(t, c)
	batch := make([]store.NewMessage, 300)
	for i := range batch {
		batch[i] = store.NewMessage{Payload: []byte(`{}`)}
	}
	if _, err := s.SendBatch(testContext(t), q, batch); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 60*time.Second, "all 300 retried and archived", func() bool { return pgtest.Archived(t, s, q) == 300 })
}

// A job's outcome settles the read that ran it, not whatever message holds
// its id by the time it is written: a queue dropped and made again while
// the job runs, handing its ids out from 1 again (as pgmq.create makes
// it), gives the id to a new message, and the old job's archive must
// leave the new message to run.
func TestOutcomeAfterQueueMadeAgainLeavesTheNewMessage(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	running, release := make(chan struct{}, 1), make(chan struct{})
	var newRuns atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		var in string
		if err := job.Decode(&in); err != nil {
			return err
		}
		if in == "old" {
			running <- struct{}{}
			<-release
			return nil
		}
		newRuns.Add(1)
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	pgtest.Start(t, c)
	old := pgtest.Send(t, c, q, "old", engine.SendOptions{})
	<-running
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	pgtest.RestartIDs(t, s, q)
	pgtest.SetFastSettings(t, s, q, nil)
	// Delayed, so that the old job's outcome comes while the new message
	// still waits for its first read.
	fresh := pgtest.Send(t, c, q, "new", engine.SendOptions{Delay: time.Second})
	if fresh != old {
		t.Fatalf("the queue made again gave the new message id %d; the test wants the old one's, %d", fresh, old)
	}
	close(release)
	pgtest.Eventually(t, 30*time.Second, "the new message to run", func() bool { return newRuns.Load() == 1 })
	pgtest.Eventually(t, 30*time.Second, "the new message to be archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
	var payload string
	var reads int
	if err := s.Pool().QueryRow(ctx, `SELECT message #>> '{}', read_ct FROM pgmq."a_`+q+`" WHERE msg_id = $1`, fresh).Scan(&payload, &reads); err != nil {
		t.Fatal(err)
	}
	if payload != "new" || reads != 1 || newRuns.Load() != 1 || pgtest.Live(t, s, q) != 0 {
		t.Fatalf("archived %q after %d reads, ran %d times, %d left live; want the new message, run once", payload, reads, newRuns.Load(), pgtest.Live(t, s, q))
	}
}

// While a write of outcomes is retried (here: the workers' role may not
// write to the queue's archive), the heartbeat still keeps the queue's other running
// jobs invisible: a job running for several visibility timeouts runs once,
// where the write held the heartbeat off and the job's message reappeared
// and ran again.
func TestHeartbeatWhileAWriteIsRetried(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := newQueue(t, owner, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second })
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	s := pgtest.OpenStore(t, roleURL)
	c, logs := loggedClient(t, s, q, slog.LevelDebug, nil)
	slow := handleSlow(c, "slow")
	c.Handle("quick", func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "slow"})
	slow.waitStarted(t)
	pgtest.Exec(t, url, `REVOKE INSERT ON pgmq."a_`+q+`" FROM `+role)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "quick"})
	slow.waitFinished(t)
	pgtest.Eventually(t, time.Minute, "the refused write logged", func() bool {
		return strings.Contains(logs.String(), "may not write the outcomes of the queue's jobs")
	})
	if slow.calls.Load() != 1 || slow.most.Load() != 1 {
		t.Fatalf("the slow job ran %d times, %d at once; want once, beside a write retried; log:\n%s", slow.calls.Load(), slow.most.Load(), logs.String())
	}
}

// archivedPastRetention makes a queue keeping its archive an hour and
// archives two messages in it, the first two hours ago: retention prunes
// it and keeps the second.
func archivedPastRetention(t *testing.T, s *store.Store) (string, []int64) {
	t.Helper()
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.ArchiveRetention = time.Hour })
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: []byte(`1`)}, {Payload: []byte(`2`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveMany(ctx, q, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`" SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	return q, ids
}

// A client prunes as it starts, not only once its first interval has
// passed: a process that never lives a whole interval (run from cron, or
// restarted more often) would otherwise leave archives to grow for ever.
func TestClientRunsRetentionAtStart(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // retention prunes the whole database
	q, _ := archivedPastRetention(t, s)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.RetentionInterval = 24 * time.Hour })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the old archive row pruned", func() bool { return pgtest.Archived(t, s, q) == 1 })
}

// A running client prunes the audit log after its AuditRetention: by
// default entries older than 90 days, as it starts; negative keeps every
// entry.
func TestClientPrunesTheAuditLog(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		retention time.Duration
		want      string // the entries left, oldest first
	}{
		{"default", 0, "80d now"},
		{"a day", 24 * time.Hour, "now"},
		{"negative", -1, "100d 80d now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // retention prunes the whole database
			ctx := testContext(t)
			q := newQueue(t, s, nil)
			// Entries 100 and 80 days old and one of now; and a per-minute
			// counter past its retention, which the pass prunes after the
			// audit log: once it is gone, the log has been pruned.
			if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.audit_log (at, client, tool) VALUES
				(now() - interval '100 days', 'cli', '100d'), (now() - interval '80 days', 'cli', '80d'), (now(), 'cli', 'now');
				INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', '`+q+`', '', 1)`); err != nil {
				t.Fatal(err)
			}
			cl := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
				cfg.RetentionInterval = 24 * time.Hour // the pass as it starts
				cfg.AuditRetention = c.retention
			})
			cl.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
			pgtest.Start(t, cl)
			pgtest.Eventually(t, 30*time.Second, "the retention pass", func() bool {
				return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = $1`, q) == 0
			})
			var left string
			if err := s.Pool().QueryRow(ctx, `SELECT string_agg(tool, ' ' ORDER BY at) FROM pgbus.audit_log`).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left != c.want {
				t.Fatalf("the audit log after retention holds %q, want %q", left, c.want)
			}
		})
	}
}

// A write of outcomes that sets no message's visibility (here an archive
// waiting for a lock on the archive table) leaves the heartbeat free to
// keep the queue's other running jobs invisible: a job running for several
// visibility timeouts runs once, where the waiting write held the heartbeat
// off and the job's message reappeared and ran again.
func TestHeartbeatWhileAWriteWaits(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnStore(t) // a pool of its own: the lock holds one of its connections
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second })
	c := pgtest.NewClient(t, s, q, nil)
	slow := handleSlow(c, "slow")
	c.Handle("fast", func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "slow"})
	slow.waitStarted(t)
	lock := pgtest.HoldLock(t, s, "a_"+q)
	pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "fast"})
	pgtest.Eventually(t, 30*time.Second, "the fast job's archive to wait for the lock", func() bool { return len(lock.Waiting()) == 1 })
	slow.waitFinished(t)
	lock.Release()
	pgtest.Eventually(t, 30*time.Second, "both archived", func() bool { return pgtest.Archived(t, s, q) >= 2 })
	if slow.calls.Load() != 1 || slow.most.Load() != 1 {
		t.Fatalf("the slow job ran %d times, %d at once; want once", slow.calls.Load(), slow.most.Load())
	}
}
