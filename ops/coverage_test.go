package ops_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Health reports no_workers for each queue with ready or retrying messages
// that no running worker serves, whatever other queues' workers do, and
// tells a queue never served from one whose workers stopped or crashed.
func TestHealthNoWorkersNeverStoppedStale(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{}}) // the command line's: its next steps start workers
	q := newQueue(t, s, nil)
	pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k"})
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}}); err != nil || r.Retried != 1 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	register(t, s, "w-other", "other_queue")
	check := func(want string) {
		t.Helper()
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := reasonOf(h, "no_workers", q)
		if h.Status != ops.HealthStalled || r == nil || r.Workers != want || !hasHint(r.Next, ops.OpWork, map[string]any{"queue": q}) || !strings.Contains(r.Message, `: 1 message ready, 0 waiting to retry;`) {
			t.Fatalf("health = %+v; want STALLED no_workers for %s with workers %s, its 1 message ready, and a hint to start one", h, q, want)
		}
	}
	check(ops.CoverageNever) // a worker runs, but for another queue

	register(t, s, "w-gone", q)
	if err := s.StopWorker(ctx, "w-gone"); err != nil {
		t.Fatal(err)
	}
	check(ops.CoverageStopped)

	register(t, s, "w-hung", q)
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '20 minutes' WHERE id = 'w-gone';
		UPDATE pgbus.workers SET heartbeat_at = now() - interval '10 minutes' WHERE id = 'w-hung'`); err != nil {
		t.Fatal(err)
	}
	check(ops.CoverageStale) // the last seen crashed
	// A process started since and shut down cleanly: the queue was left
	// by a shutdown, whatever became of the one before.
	register(t, s, "w-since", q)
	if err := s.StopWorker(ctx, "w-since"); err != nil {
		t.Fatal(err)
	}
	check(ops.CoverageStopped)
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := reasonOf(h, "stale_workers", ""); r == nil || !strings.HasPrefix(r.Message, "1 worker process stopped sending heartbeats") || !strings.Contains(r.Message, "its messages return after its visibility timeout") {
		t.Fatalf("health = %+v; want stale_workers counting its one worker process in the singular", h)
	}

	register(t, s, "w-live", q)
	h, err = svc.Health(ctx)
	if err != nil || reasonOf(h, "no_workers", q) != nil || *h.Workers != 2 {
		t.Fatalf("health with a running worker for %s = %+v, %v; want no no_workers reason, 2 running", q, h, err)
	}
}

// A retry, and a resume, into a queue no running worker serves say so in
// their result and put starting one first among the next steps; with a
// worker serving it they say that instead.
func TestRetryAndResumeSayWhetherWorkersServe(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{}}) // the command line's: its next steps start workers
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"})

	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(r.Workers) != 1 || r.Workers[0].Queue != q || r.Workers[0].Served() || r.Workers[0].Status != ops.CoverageNever ||
		!strings.Contains(r.Workers[0].Note, "will not run until one is started") || len(r.Next) == 0 || r.Next[0].Op != ops.OpWork || r.Next[0].Args["queue"] != q {
		t.Fatalf("retry without workers = %+v, %v; want workers never and next starting with %s for %s", r, err, ops.OpWork, q)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	p, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: q})
	if err != nil || p.Workers == nil || p.Workers.Served() || len(p.Next) == 0 || p.Next[0].Op != ops.OpWork {
		t.Fatalf("resume without workers = %+v, %v; want a workers note and next %s", p, err, ops.OpWork)
	}

	register(t, s, "w-live", q)
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[1:], Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || len(r.Workers) != 1 || !r.Workers[0].Served() || r.Workers[0].Running != 1 || hasHint(r.Next, ops.OpWork, nil) {
		t.Fatalf("dry-run retry with a worker = %+v, %v; want workers running 1 and no hint to start one", r, err)
	}
	p, err = svc.QueueResume(ctx, ops.QueueRequest{Queue: q})
	if err != nil || p.Workers == nil || !p.Workers.Served() || hasHint(p.Next, ops.OpWork, nil) {
		t.Fatalf("resume with a worker = %+v, %v; want workers running", p, err)
	}
}

func register(t *testing.T, s *store.Store, id, queue string) {
	t.Helper()
	if err := s.RegisterWorker(testContext(t), store.WorkerProcess{ID: id, Hostname: "h", PID: 1, Queues: []string{queue}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
}

func reasonOf(h ops.Health, code, queue string) *ops.HealthReason {
	for i, r := range h.Reasons {
		if r.Code == code && r.Queue == queue {
			return &h.Reasons[i]
		}
	}
	return nil
}

// A retry into a queue whose handlers use a breaker that is open says so
// first among its next steps: the retried jobs wait for the breaker. A
// closed breaker, or an open one on another queue, says nothing.
func TestRetryNamesAnOpenBreakerOfItsQueue(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // the breakers are left open
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q, other := newQueue(t, s, nil), newQueue(t, s, nil)
	register(t, s, uniqueName("w"), q)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"})
	breaker := func(users []store.BreakerUser, failures int) string {
		t.Helper()
		name := uniqueName("http:bank")
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordBreakerUsers(ctx, name, users); err != nil {
			t.Fatal(err)
		}
		for range failures {
			if _, err := s.BreakerFailed(ctx, name, "503"); err != nil {
				t.Fatal(err)
			}
		}
		return name
	}
	closed := breaker([]store.BreakerUser{{Queue: q, Kind: "k"}}, 0)
	elsewhere := breaker([]store.BreakerUser{{Queue: other}}, 1)
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || r.Retried != 1 || hasHint(r.Next, ops.OpCircuits, nil) {
		t.Fatalf("retry with %s closed and %s open on another queue = %+v, %v; want no breaker named", closed, elsewhere, r, err)
	}
	open := breaker([]store.BreakerUser{{Queue: q, Kind: "k"}}, 1)
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[1:], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || r.Retried != 2 || len(r.Next) == 0 || r.Next[0].Op != ops.OpCircuits || r.Next[0].Args["name"] != open ||
		!strings.Contains(r.Next[0].Why, "is open: the retried jobs wait for it") || hasHint(r.Next, ops.OpCircuits, map[string]any{"name": elsewhere}) {
		t.Fatalf("retry with %s open on the queue = %+v, %v; want it first among the next steps", open, r, err)
	}
}

// A plain queue named like a level of another (jobs_p2 beside jobs with 2
// levels) is served by its own workers only: a worker of jobs neither
// covers its ready messages in health nor in a retry's note into it, and
// its STALLED reason is not jobs' process's. A level of jobs is served by
// jobs' workers.
func TestPlainQueueNamedLikeALevelIsNotServedByItsNamesake(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{}}) // the command line's: its next steps start workers
	base := uniqueName("lvn")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: base, Priorities: 2}); err != nil {
		t.Fatal(err)
	}
	plain := base + "_p2"
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: plain}); err != nil {
		t.Fatal(err)
	}
	ids := pgtest.DeadLetter(t, s, plain, pgtest.DeadSpec{Kind: "k"})
	register(t, s, "w-base", base)

	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: plain}})
	if err != nil || len(r.Workers) != 1 || r.Workers[0].Queue != plain || r.Workers[0].Served() || len(r.Next) == 0 || r.Next[0].Op != ops.OpWork {
		t.Fatalf("retry into %s = %+v, %v; want it said unserved, with a worker to start first", plain, r, err)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reasonOf(h, "no_workers", plain) == nil {
		t.Fatalf("health = %+v; want STALLED no_workers for %s, which the worker of %s does not read", h, plain, base)
	}
	if own := h.StalledFor([]string{base}); len(own) != 0 {
		t.Fatalf("stalled reasons of %s's process = %+v, want none: %s is not its queue", base, own, plain)
	}
	level := store.PriorityQueueName(base, 1)
	sent, err := s.SendBatch(ctx, level, []store.NewMessage{{Payload: json.RawMessage(`1`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeadLetterMany(ctx, level, store.DLQName(base), store.SourceWorker, []store.DeadLetterItem{{MsgID: sent[0],
		Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}}); err != nil {
		t.Fatal(err)
	}
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: base}, Limit: 10})
	if err != nil || r.Retried != 1 || len(r.Workers) != 1 || r.Workers[0].Queue != base || !r.Workers[0].Served() {
		t.Fatalf("retry into level 1 of %s = %+v, %v; want the level served by the worker of %s", base, r, err, base)
	}
}

// Ready messages of another PGMQ client's queue whose name is too long for
// pgbus to work (no DLQ name fits) wait for that client: no pgbus worker
// can serve it, so pgbus never manages it, and health pages about none.
func TestHealthOfAQueueTooLongToWork(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	made := newQueue(t, s, nil)
	long := "x" + strings.Repeat("y", 43) // 44 characters: PGMQ takes it, pgbus works 43
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq.q_`+made+` RENAME TO q_`+long+`;
		ALTER TABLE pgmq.a_`+made+` RENAME TO a_`+long+`;
		UPDATE pgmq.meta SET queue_name = '`+long+`' WHERE queue_name = '`+made+`';
		DELETE FROM pgbus.queues WHERE queue_name = '`+made+`';
		INSERT INTO pgmq.q_`+long+` (vt, message) VALUES (now(), '{}')`); err != nil {
		t.Fatal(err)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != ops.HealthOK || len(h.Reasons) != 0 || *h.Queues != 1 {
		t.Fatalf("health = %+v; want OK without a reason, %s counted among the queues", h, long)
	}
}
