// Package grace gives work begun before its caller gave up the time to
// finish: a statement whose commit may already have happened must be let
// finish and be told of, not cut off with its effect unknown.
package grace

import (
	"context"
	"sync"
	"time"
)

// givenUpKey holds, in a context After returns, the Done channel of the
// caller's context.
type givenUpKey struct{}

// After returns a context with the values of ctx that is cancelled d
// after ctx is, so that work started before the cancellation can finish
// and be told of; stop releases it. Work that has not committed yet asks
// GivenUp whether to commit at all.
func After(ctx context.Context, d time.Duration) (_ context.Context, stop context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), givenUpKey{}, ctx.Done()))
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
	)
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(d, cancel)
		}
	})
	return out, func() {
		stopAfter()
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// GivenUp reports whether the caller of the work ctx carries gave up on
// it: the context After was given has ended. Work that can still undo
// itself (a transaction not committed) undoes itself then, so that
// nothing is left for the caller to give back. A context After did not
// make is never given up on this way.
func GivenUp(ctx context.Context) bool {
	done, _ := ctx.Value(givenUpKey{}).(<-chan struct{})
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}
