package ops

import (
	"context"
	"time"
)

// enter is the first step of every exported method of Service that takes
// a context: a call on a nil Service, on one that New did not make (it
// has no store), or with a nil context is refused with an error that says
// what to pass, rather than panicking deep in the store or the driver.
// method names the call, as a Go caller wrote it. It returns ctx with the
// call's bound on its database work (see bound), for a call whose effect
// is e, and the function that ends the bound, which the caller defers.
func (s *Service) enter(ctx context.Context, method string, e effect) (context.Context, context.CancelFunc, error) {
	if err := s.usable(ctx, method); err != nil {
		return ctx, func() {}, err
	}
	if err := s.opts.Gate.refusal(ctx); err != nil {
		return ctx, func() {}, err
	}
	ctx, end := s.bound(ctx, e)
	if e == writesInSteps {
		ctx = withSteps(ctx)
	}
	s.syncClock(ctx)
	return ctx, end, nil
}

// clockSyncEvery is how often the database server's clock is measured
// again, at the start of a call; clockSyncWait bounds the measure, which
// a call that then fails on its database work would otherwise wait for
// twice.
const (
	clockSyncEvery = time.Minute
	clockSyncWait  = 2 * time.Second
)

// syncClock measures the database server's clock when the service
// compares times on it and it was last measured over clockSyncEvery ago.
// A failure keeps the last measure: the call's own work says what is
// wrong.
func (s *Service) syncClock(ctx context.Context) {
	if !s.dbClock {
		return
	}
	if _, at := s.store.ClockSkew(); !at.IsZero() && time.Since(at) < clockSyncEvery {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, clockSyncWait)
	defer cancel()
	_, _ = s.store.SyncClock(ctx)
}

// usable refuses a call enter cannot make.
func (s *Service) usable(ctx context.Context, method string) error {
	switch {
	case s == nil:
		return invalidf("ops.Service.%s called on a nil *ops.Service: call it on the Service that ops.New returns", method)
	case s.store == nil:
		return invalidf("ops.Service.%s called on a Service that ops.New did not make: call it on the Service that ops.New returns", method)
	case ctx == nil:
		return invalidf("ops.Service.%s needs a context: pass context.Background(), or one that bounds the call", method)
	}
	return nil
}
