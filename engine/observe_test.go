package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

type seenKey struct{}

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu       sync.Mutex
	started  []int64
	finished []finished
}

type finished struct {
	id     int64
	f      engine.Finish
	ctxTag any
}

func (r *recorder) JobStarted(ctx context.Context, job *engine.Job) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, job.ID)
	return context.WithValue(ctx, seenKey{}, job.ID)
}

func (r *recorder) JobFinished(ctx context.Context, job *engine.Job, f engine.Finish) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, finished{id: job.ID, f: f, ctxTag: ctx.Value(seenKey{})})
}

func (r *recorder) of(id int64) []finished {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []finished
	for _, f := range r.finished {
		if f.id == id {
			out = append(out, f)
		}
	}
	return out
}

// Observers are told of each delivery's start and end with its outcome:
// a success, a failure retried and then dead-lettered, and a message with
// no handler settled without running; the handler runs in the context the
// observer returned.
func TestObserversSeeEveryOutcome(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 2 })
	rec := &recorder{}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{nil, rec} })
	var handlerSaw sync.Map
	c.Handle("ok", func(ctx context.Context, job *engine.Job) error {
		handlerSaw.Store(job.ID, ctx.Value(seenKey{}))
		return nil
	})
	c.Handle("fail", func(context.Context, *engine.Job) error { return errors.New("downstream said 503") })
	pgtest.Start(t, c)
	ok := pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{Kind: "ok"})
	bad := pgtest.Send(t, c, q, map[string]int{"n": 2}, engine.SendOptions{Kind: "fail"})
	lost := pgtest.Send(t, c, q, map[string]int{"n": 3}, engine.SendOptions{Kind: "nobody"})
	pgtest.Eventually(t, 30*time.Second, "three outcomes settled", func() bool {
		return len(rec.of(ok)) == 1 && len(rec.of(bad)) == 2 && len(rec.of(lost)) == 1
	})

	if got := rec.of(ok)[0]; got.f.Outcome != engine.OutcomeSucceeded || !got.f.Ran || got.f.Err != nil || got.ctxTag != ok {
		t.Errorf("success: %+v", got)
	}
	if v, _ := handlerSaw.Load(ok); v != ok {
		t.Errorf("the handler's context lacks the observer's value: %v", v)
	}
	b := rec.of(bad)
	if b[0].f.Outcome != engine.OutcomeRetried || b[0].f.Delay <= 0 || b[0].f.ErrorClass == "" || b[0].f.Err.Error() != "downstream said 503" {
		t.Errorf("first failure: %+v", b[0])
	}
	if b[1].f.Outcome != engine.OutcomeDeadLettered || b[1].f.Reason != store.ReasonMaxRetriesExceeded || !b[1].f.Ran {
		t.Errorf("second failure: %+v", b[1])
	}
	l := rec.of(lost)[0]
	if l.f.Outcome != engine.OutcomeDeadLettered || l.f.Ran || l.f.ErrorClass != engine.ClassUnknownKind || l.f.Reason != store.ReasonNonRetryable || l.ctxTag != nil {
		t.Errorf("no handler: %+v", l)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if slices.Contains(rec.started, lost) || !slices.Contains(rec.started, ok) {
		t.Errorf("started %v: want %d, not %d", rec.started, ok, lost)
	}
}

// panicky is an observer with a bug: it panics at every job's start and
// end, or returns no context.
type panicky struct{ nilContext bool }

func (p panicky) JobStarted(ctx context.Context, job *engine.Job) context.Context {
	if p.nilContext {
		return nil
	}
	panic("observer bug at start")
}

func (p panicky) JobFinished(context.Context, *engine.Job, engine.Finish) {
	panic("observer bug at finish")
}

// An observer that panics, or returns a nil context, is logged and
// skipped: the job runs, its outcome is written, the other observers are
// told, and the worker goes on, where the panic took the whole process
// down.
func TestPanickingObserverDoesNotStopTheWorker(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	rec := &recorder{}
	var log pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Observers = []engine.Observer{panicky{}, panicky{nilContext: true}, rec}
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	var handlerSaw sync.Map
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		handlerSaw.Store(job.ID, ctx.Value(seenKey{}))
		return nil
	})
	pgtest.Start(t, c)
	first := pgtest.Send(t, c, q, 1, engine.SendOptions{})
	second := pgtest.Send(t, c, q, 2, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "both messages archived", func() bool { return pgtest.Archived(t, s, q) == 2 })
	pgtest.Eventually(t, time.Minute, "the recorder told of both", func() bool { return len(rec.of(first)) == 1 && len(rec.of(second)) == 1 })
	if saw, _ := handlerSaw.Load(first); saw != first {
		t.Errorf("the handler ran in a context without the recorder's value: %v", saw)
	}
	for _, want := range []string{"observer bug at start", "observer bug at finish", "returned a nil context"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log does not mention %q:\n%s", want, log.String())
		}
	}
}

// panickySender is a SendObserver with a bug: its Sending panics, or
// returns a done function that panics.
type panickySender struct {
	panicky
	inDone bool
}

func (p panickySender) Sending(context.Context, string, *engine.SendOptions) func(int64, error) {
	if p.inDone {
		return func(int64, error) { panic("observer bug after send") }
	}
	panic("observer bug at send")
}

// A SendObserver that panics in Sending, or in the function it returns,
// is logged and skipped as in a job: the send goes on, the message is
// enqueued, and the other observers see it, where the panic reached the
// caller of Send.
func TestPanickingSendObserverDoesNotStopTheSend(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	var log pgtest.SyncBuffer
	var sawID atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Observers = []engine.Observer{panickySender{}, panickySender{inDone: true}, idSender{&sawID}}
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	id, err := c.Send(testContext(t), q, 1, engine.SendOptions{})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages in the queue after a send, want 1", n)
	}
	if got := sawID.Load(); got != id {
		t.Errorf("the healthy observer saw id %d, want %d", got, id)
	}
	for _, want := range []string{"observer bug at send", "observer bug after send", "the send goes on"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log does not mention %q:\n%s", want, log.String())
		}
	}
}

// idSender is a SendObserver that keeps the id of the last send.
type idSender struct{ id *atomic.Int64 }

func (idSender) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }
func (idSender) JobFinished(context.Context, *engine.Job, engine.Finish)       {}
func (o idSender) Sending(context.Context, string, *engine.SendOptions) func(int64, error) {
	return func(id int64, _ error) { o.id.Store(id) }
}
