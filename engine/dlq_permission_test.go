package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// refusedDLQ is a queue made by its owner whose workers run as an operator
// role granted every table but the queue's DLQ: its owner made the queue
// after the grants, without ALTER DEFAULT PRIVILEGES, and granted the
// queue alone.
type refusedDLQ struct {
	url, queue, role string
	owner, operator  *store.Store
	logs             pgtest.SyncBuffer
}

func newRefusedDLQ(t *testing.T, edit func(*store.QueueSettings)) *refusedDLQ {
	t.Helper()
	r := &refusedDLQ{url: pgtest.NewDatabase(t)}
	r.owner = pgtest.OpenStore(t, r.url)
	r.queue = newQueue(t, r.owner, edit)
	var roleURL string
	r.role, roleURL = pgtest.NewRole(t, r.url)
	pgtest.Exec(t, r.url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+r.role)
	pgtest.Exec(t, r.url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+r.role)
	pgtest.Exec(t, r.url, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+r.role)
	pgtest.Exec(t, r.url, "REVOKE ALL ON pgmq.q_"+r.queue+"_dlq FROM "+r.role)
	r.operator = pgtest.OpenStore(t, roleURL)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(r.logs.String())
		}
	})
	return r
}

// client is an engine client of the queue opened as the operator role.
func (r *refusedDLQ) client(t *testing.T) *engine.Client {
	return pgtest.NewClient(t, r.operator, r.queue, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&r.logs, nil))
	})
}

// grantDLQ gives the role what the DLQ lacked.
func (r *refusedDLQ) grantDLQ(t *testing.T) {
	pgtest.Exec(t, r.url, "GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.q_"+r.queue+"_dlq TO "+r.role)
}

// checkLogged checks that the log names the grant missing once, however
// often the write was refused.
func (r *refusedDLQ) checkLogged(t *testing.T) {
	t.Helper()
	want := "GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.q_" + r.queue + "_dlq TO " + r.role
	if n := strings.Count(r.logs.String(), want); n != 1 {
		t.Errorf("the log says %q %d times, want once:\n%s", want, n, r.logs.String())
	}
	if !strings.Contains(r.logs.String(), "ALTER DEFAULT PRIVILEGES") {
		t.Errorf("the log does not say how to cover the queues created later:\n%s", r.logs.String())
	}
}

// A job that fails for good on a queue whose DLQ the workers' role may not
// insert into stays in its queue, its failure recorded, and comes back
// after its visibility timeout; the queue's other jobs run and are
// archived meanwhile, where the writer of outcomes retried the dead letter
// without end and held them all up. The log says what to grant, once.
// Once granted, the message is dead-lettered when it next fails.
func TestDeadLetterRefusedLeavesTheMessageQueued(t *testing.T) {
	t.Parallel()
	r := newRefusedDLQ(t, func(qs *store.QueueSettings) { qs.VisibilityTimeout = 2 * time.Second })
	c := r.client(t)
	var bad atomic.Int32
	c.Handle("bad", deadOrOK(&bad))
	c.Handle("ok", deadOrOK(&bad))
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, r.queue, 1, engine.SendOptions{Kind: "bad"})
	pgtest.Eventually(t, 30*time.Second, "the bad message to run", func() bool { return bad.Load() >= 1 })
	for i := range 3 {
		pgtest.Send(t, c, r.queue, 2+i, engine.SendOptions{Kind: "ok"})
	}
	pgtest.Eventually(t, 60*time.Second, "the good messages archived beside it", func() bool { return pgtest.Archived(t, r.owner, r.queue) == 3 })
	pgtest.Eventually(t, 60*time.Second, "the bad message to run again", func() bool { return bad.Load() >= 3 })
	if n := pgtest.Live(t, r.owner, r.queue); n != 1 {
		t.Fatalf("%d messages in the queue, want the one to dead-letter", n)
	}
	if fs := failures(t, r.owner, r.queue, id); len(fs) < 2 || fs[0].Message != "bad input" {
		t.Errorf("failure history %+v, want each refused attempt's failure", fs)
	}
	r.checkLogged(t)

	r.grantDLQ(t)
	pgtest.Eventually(t, 60*time.Second, "the message in the DLQ once granted", func() bool { return dlqCount(t, r.owner, r.queue) == 1 })
	if n := pgtest.Live(t, r.owner, r.queue); n != 0 {
		t.Errorf("%d messages left in the queue, want none", n)
	}
	d := deadMessages(t, r.owner, r.queue)[0]
	if fs := failures(t, r.owner, r.queue+"_dlq", d.ID); len(fs) < 3 {
		t.Errorf("the dead letter's history has %d failures, want every attempt's", len(fs))
	}
	// The dead letter commits before the worker says so.
	pgtest.Eventually(t, time.Minute, "the log to say dead-lettering works again", func() bool {
		return strings.Contains(r.logs.String(), "dead-lettering works again")
	})
}

// A message read more than max_retries times (its workers crashed) is
// dead-lettered unrun in the read's own transaction: refused, that failed
// the whole read, again and again, and no message of the queue ran. It
// stays in its queue now, the others run, and once granted it goes to the
// DLQ.
func TestReadTimeDeadLetterRefusedLetsTheQueueRun(t *testing.T) {
	t.Parallel()
	r := newRefusedDLQ(t, func(qs *store.QueueSettings) { qs.MaxRetries = 1; qs.VisibilityTimeout = 2 * time.Second })
	ctx := testContext(t)
	c := r.client(t)
	var bad atomic.Int32
	c.Handle("ok", deadOrOK(&bad))
	id := pgtest.Send(t, c, r.queue, 1, engine.SendOptions{Kind: "ok"})
	for range 2 { // two deliveries that "crashed"
		if got, err := r.owner.Read(ctx, r.queue, time.Second, 1); err != nil || len(got) != 1 {
			t.Fatalf("read: %v %v", got, err)
		}
		if _, err := r.owner.SetVisibility(ctx, r.queue, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		pgtest.Send(t, c, r.queue, 2+i, engine.SendOptions{Kind: "ok"})
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, 60*time.Second, "the other messages archived", func() bool { return pgtest.Archived(t, r.owner, r.queue) == 3 })
	pgtest.Eventually(t, 60*time.Second, "the message read again", func() bool {
		return pgtest.Int(t, r.owner, `SELECT read_ct FROM pgmq."q_`+r.queue+`" WHERE msg_id = $1`, id) >= 4
	})
	if n := pgtest.Live(t, r.owner, r.queue); n != 1 {
		t.Fatalf("%d messages in the queue, want the one to dead-letter", n)
	}
	if bad.Load() != 0 {
		t.Fatal("a handler failed")
	}
	r.checkLogged(t)

	r.grantDLQ(t)
	pgtest.Eventually(t, 60*time.Second, "the message in the DLQ once granted", func() bool { return dlqCount(t, r.owner, r.queue) == 1 })
	if b := deadMessages(t, r.owner, r.queue)[0].Block; b["reason"] != store.ReasonMaxRetriesExceeded {
		t.Errorf("block = %v, want reason %s", b, store.ReasonMaxRetriesExceeded)
	}
}

// A write of outcomes refused for want of a privilege (the archive of a
// queue made after the grants) is retried, so that no job that succeeded
// runs again, but logged once, with the GRANT to run and as whom, where a
// warning came at every retry; once granted, the outcome lands, the job
// having run once, and the log says so.
func TestRefusedArchiveIsLoggedOnceWithItsGrant(t *testing.T) {
	t.Parallel()
	r := newRefusedDLQ(t, nil)
	pgtest.Exec(t, r.url, "GRANT ALL ON pgmq.q_"+r.queue+"_dlq TO "+r.role)
	pgtest.Exec(t, r.url, "REVOKE INSERT ON pgmq.a_"+r.queue+" FROM "+r.role)
	var ran atomic.Int64
	c := pgtest.NewClient(t, r.operator, r.queue, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c.HandleQueue(r.queue, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, r.queue, 1, engine.SendOptions{})
	grant := "run as "
	pgtest.Eventually(t, time.Minute, "the refusal logged with its grant", func() bool {
		return strings.Contains(r.logs.String(), "GRANT INSERT ON pgmq.a_"+r.queue+" TO "+r.role) && strings.Contains(r.logs.String(), grant)
	})
	pgtest.Eventually(t, time.Minute, "the refused write retried three times", func() bool {
		return strings.Count(r.logs.String(), "refused again for want of a privilege; retrying") >= 3
	})
	if n := strings.Count(r.logs.String(), "may not write the outcomes"); n != 1 || strings.Contains(r.logs.String(), "writing outcomes failed; retrying") {
		t.Fatalf("the refusal was logged %d times; want once, and no warning at each retry:\n%s", n, r.logs.String())
	}
	pgtest.Exec(t, r.url, "GRANT INSERT ON pgmq.a_"+r.queue+" TO "+r.role)
	pgtest.Eventually(t, time.Minute, "the outcome written once granted", func() bool { return pgtest.Archived(t, r.owner, r.queue) == 1 })
	// The write commits before the worker says so.
	pgtest.Eventually(t, time.Minute, "the log to say outcomes are written again", func() bool {
		return strings.Contains(r.logs.String(), "outcomes are written again")
	})
	if ran.Load() != 1 {
		t.Fatalf("the job ran %d times (want once: the refused outcome is retried, not the job); log:\n%s", ran.Load(), r.logs.String())
	}
}

// outcomes counts what rec was told of message id, by outcome.
func outcomes(rec *recorder, id int64) map[string]int {
	n := map[string]int{}
	for _, f := range rec.of(id) {
		n[f.f.Outcome]++
	}
	return n
}

// A dead letter is reported to the observers once it is in the DLQ, and
// only then. While the database refuses it, each delivery is reported as
// what was written, a retry after the visibility timeout with its failure,
// where each was reported dead-lettered before its write was tried: a
// message coming back every visibility timeout counted one more dead
// letter each time, and the metrics told of DLQs far fuller than they
// were. Once granted, the dead letter lands and is reported once.
func TestDeadLetterReportedOnceWritten(t *testing.T) {
	t.Parallel()
	r := newRefusedDLQ(t, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second; qs.MaxRetries = 100 })
	rec := &recorder{}
	c := pgtest.NewClient(t, r.operator, r.queue, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&r.logs, nil))
		cfg.Observers = []engine.Observer{rec}
	})
	var bad atomic.Int32
	c.Handle("bad", deadOrOK(&bad))
	stop := pgtest.Start(t, c)
	id := pgtest.Send(t, c, r.queue, 1, engine.SendOptions{Kind: "bad"})
	pgtest.Eventually(t, time.Minute, "three runs refused and reported", func() bool {
		return bad.Load() >= 3 && len(rec.of(id)) >= 3
	})
	if got := outcomes(rec, id); got[engine.OutcomeDeadLettered] != 0 {
		t.Fatalf("outcomes reported while the DLQ refuses the message: %v; want no dead letter", got)
	}
	for _, f := range rec.of(id) {
		if f.f.Delay != time.Second || f.f.Reason != "" || f.f.ErrorClass == "" || !f.f.Ran || f.ctxTag != id {
			t.Errorf("a refused dead letter reported as %+v; want a retry after the visibility timeout, with its error", f)
		}
	}
	if n := dlqCount(t, r.owner, r.queue); n != 0 {
		t.Fatalf("%d messages in the DLQ while it refuses them", n)
	}

	r.grantDLQ(t)
	pgtest.Eventually(t, time.Minute, "the message in the DLQ once granted", func() bool { return dlqCount(t, r.owner, r.queue) == 1 })
	stop() // every outcome written is reported by then
	got := outcomes(rec, id)
	if got[engine.OutcomeDeadLettered] != 1 {
		t.Errorf("outcomes reported: %v; want one dead letter, the one in the DLQ", got)
	}
	if runs, told := int(bad.Load()), len(rec.of(id)); told != runs {
		t.Errorf("the handler ran %d times and %d outcomes were reported; want one for each run", runs, told)
	}
	if last := rec.of(id)[len(rec.of(id))-1].f; last.Outcome != engine.OutcomeDeadLettered || last.Reason != store.ReasonNonRetryable || last.Elapsed <= 0 {
		t.Errorf("the last outcome reported is %+v; want the dead letter, non-retryable, with the handler's run time", last)
	}
}

// abandonRecorder is a recorder told of the deliveries whose outcomes are
// not written, too.
type abandonRecorder struct {
	*recorder
	abandoned atomic.Int32
}

func (r *abandonRecorder) JobAbandoned(context.Context, *engine.Job) { r.abandoned.Add(1) }

// A success whose write the database refuses until the worker stops is
// not reported as succeeded: it is not archived, and runs again later,
// when it would be reported a second time. The observers are told it was
// abandoned, so that a tracer ends its span.
func TestOutcomeNotWrittenBeforeStopIsNotReported(t *testing.T) {
	t.Parallel()
	r := newRefusedDLQ(t, nil)
	pgtest.Exec(t, r.url, "GRANT ALL ON pgmq.q_"+r.queue+"_dlq TO "+r.role)
	pgtest.Exec(t, r.url, "REVOKE INSERT ON pgmq.a_"+r.queue+" FROM "+r.role)
	rec := &abandonRecorder{recorder: &recorder{}}
	c := pgtest.NewClient(t, r.operator, r.queue, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cfg.Observers = []engine.Observer{rec}
	})
	var ran atomic.Int32
	c.HandleQueue(r.queue, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	stop := pgtest.Start(t, c)
	id := pgtest.Send(t, c, r.queue, 1, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the archive's refusal retried", func() bool {
		return strings.Contains(r.logs.String(), "refused again for want of a privilege; retrying")
	})
	if got := rec.of(id); len(got) != 0 {
		t.Fatalf("a success not archived was reported: %+v", got)
	}
	stop()
	if n := pgtest.Archived(t, r.owner, r.queue); n != 0 || ran.Load() != 1 {
		t.Fatalf("%d archived after %d runs; want none archived, after one run", n, ran.Load())
	}
	if got := rec.of(id); len(got) != 0 {
		t.Errorf("a success whose write was given up at the stop was reported: %+v", got)
	}
	if n := rec.abandoned.Load(); n != 1 {
		t.Errorf("the observer was told of %d abandoned deliveries, want the one whose write was given up", n)
	}
}
