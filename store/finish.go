package store

import (
	"context"
	"sync"
	"time"
)

// moveGrace is how long a move under way may go on once its call is
// cancelled: a move takes milliseconds, unless it waits for a lock.
const moveGrace = 10 * time.Second

// finishing returns a context with the values of ctx that is cancelled
// grace after ctx is, so that work started before the cancellation can
// finish and be told of; stop releases it.
func finishing(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var timer *time.Timer
	var mu sync.Mutex
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(grace, cancel)
	})
	return out, func() {
		stopAfter()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// finishStatement runs fn, one statement whose effect its caller counts,
// unless ctx has already ended. A statement the cancellation of ctx cut
// off could still commit, its outcome never read, and go uncounted; so fn
// gets a context that lets it finish, unless it is still going moveGrace
// after the cancellation.
func finishStatement(ctx context.Context, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, stop := finishing(ctx, moveGrace)
	defer stop()
	return fn(c)
}
