// Package grace gives work begun before its caller gave up the time to
// finish: a statement whose commit may already have happened must be let
// finish and be told of, not cut off with its effect unknown.
package grace

import (
	"context"
	"sync"
	"time"
)

// After returns a context with the values of ctx that is cancelled d
// after ctx is, so that work started before the cancellation can finish
// and be told of; stop releases it.
func After(ctx context.Context, d time.Duration) (_ context.Context, stop context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var timer *time.Timer
	var mu sync.Mutex
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(d, cancel)
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
