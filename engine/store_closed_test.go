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
