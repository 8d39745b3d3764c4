package ops_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// buggyObserver is an observer with a bug: its Retrying panics, or
// returns a done function that panics; its Sending panics.
type buggyObserver struct{ inDone bool }

func (buggyObserver) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }
func (buggyObserver) JobFinished(context.Context, *engine.Job, engine.Finish)       {}

func (b buggyObserver) Retrying(context.Context, string, int64, store.TraceContext) (store.TraceContext, func(string, int64, error)) {
	if b.inDone {
		return store.TraceContext{}, func(string, int64, error) { panic("observer bug after retry") }
	}
	panic("observer bug at retry")
}

func (buggyObserver) Sending(context.Context, string, *engine.SendOptions) func(int64, error) {
	panic("observer bug at send")
}

// seenRetries is a RetryObserver that counts the moves it is told of.
type seenRetries struct{ done atomic.Int32 }

func (*seenRetries) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }
func (*seenRetries) JobFinished(context.Context, *engine.Job, engine.Finish)       {}

func (s *seenRetries) Retrying(_ context.Context, _ string, _ int64, tc store.TraceContext) (store.TraceContext, func(string, int64, error)) {
	return tc, func(_ string, _ int64, err error) {
		if err == nil {
			s.done.Add(1)
		}
	}
}

// An observer that panics in Retrying, in the done it returns, or in
// Sending is logged and the operation goes on with the other observers,
// where the panic on the store's goroutine took the whole process.
func TestPanickingObserverIsLoggedAndTheRetryGoesOn(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k"})
	var log pgtest.SyncBuffer
	seen := &seenRetries{}
	svc := newService(t, s, ops.Options{
		Logger:    slog.New(slog.NewTextHandler(&log, nil)),
		Observers: []engine.Observer{buggyObserver{}, buggyObserver{inDone: true}, seen},
	})

	res, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || res.Retried != len(ids) {
		t.Fatalf("retry with a panicking observer: %+v, %v", res, err)
	}
	if n := seen.done.Load(); n != int32(len(ids)) {
		t.Errorf("the other observer was told of %d moves, want %d", n, len(ids))
	}
	for _, want := range []string{"method=Retrying ", `method="Retrying's done"`, "observer bug at retry", "observer bug after retry"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}

	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("send with a panicking observer: %v", err)
	}
	if !strings.Contains(log.String(), "observer bug at send") || !strings.Contains(log.String(), "an observer panicked") {
		t.Errorf("the service's log does not tell of the observer's panic at send:\n%s", log.String())
	}
}
