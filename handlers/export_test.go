package handlers

import (
	"context"
	"time"
)

// WithDrainWait returns ctx bounding the read of a response body by d
// instead of the handler's own bound, for a job run with it.
func WithDrainWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, drainWaitKey{}, d)
}
