package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A program that closes its Store while Run still works with it, as a
// shutdown that closes things in the wrong order does, gets Run's return
// with an error saying so: not workers failing every statement in the log
// until someone ends Run's context, and then a nil error as if all went
// well. The job running then is given back, not lost.
func TestRunReturnsWhenItsStoreIsClosed(t *testing.T) {
	t.Parallel()
	st := pgtest.OwnStore(t)
	q := newQueue(t, st, nil)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) { cfg.DrainTimeout = 200 * time.Millisecond })
	c.Handle("job", func(ctx context.Context, _ *engine.Job) error {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	id := pgtest.Send(t, c, q, json.RawMessage(`{}`), engine.SendOptions{Kind: "job"})
	<-started
	st.Close()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run still runs a minute after its Store was closed")
	}
	if !errors.Is(err, store.ErrClosed) || !strings.Contains(err.Error(), "after Run returns") {
		t.Fatalf("Run returned %v; want store.ErrClosed, saying to close the Store after Run returns", err)
	}
	other := pgtest.OwnStore(t)
	if n := pgtest.Int(t, other, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = `+itoa(id)); n != 1 {
		t.Errorf("the job running when the Store closed is %d times in its queue, want 1", n)
	}
}

// A program that closes the pool it gave store.New while Run works with
// it gets Run's return with store.ErrClosed, saying that the pool was
// closed (not the Store, which it never closed), rather than workers
// retrying a closed pool for good. A job that finishes after the close
// does not keep Run in its drain for the drain timeout, retrying the
// write of its outcome on the closed pool: the write is given up, and the
// message runs again after its visibility timeout.
func TestRunReturnsWhenThePoolGivenToNewIsClosed(t *testing.T) {
	t.Parallel()
	_, q := storeAndQueue(t)
	pool, st := sharedPool(t, 4)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) { cfg.DrainTimeout = 10 * time.Minute })
	c.Handle("job", func(ctx context.Context, _ *engine.Job) error {
		started <- struct{}{}
		<-release
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	pgtest.Send(t, c, q, json.RawMessage(`{}`), engine.SendOptions{Kind: "job"})
	<-started
	pool.Close()
	close(release)
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run still runs a minute after the pool it works on was closed")
	}
	if !errors.Is(err, store.ErrClosed) || !strings.Contains(err.Error(), "the pool this Store wraps was closed") || strings.Contains(err.Error(), "Store.Close") {
		t.Fatalf("Run returned %v; want store.ErrClosed, saying the pool the Store wraps was closed", err)
	}
}

// A statement on a Store whose pool its owner closed says so, and not
// that the Store was closed.
func TestStatementOnAClosedPoolSaysThePoolWasClosed(t *testing.T) {
	t.Parallel()
	pool, st := sharedPool(t, 1)
	pool.Close()
	_, err := st.PhysicalQueues(testContext(t), "q")
	if !errors.Is(err, store.ErrClosed) || !strings.Contains(err.Error(), "the pool this Store wraps was closed") || strings.Contains(err.Error(), "this Store was closed (Store.Close)") {
		t.Fatalf("a read on a Store whose pool was closed: %v; want store.ErrClosed, saying the pool the Store wraps was closed", err)
	}
	select {
	case <-st.Closed():
	default:
		t.Error("Closed() is not closed once a statement found the pool closed")
	}
}
