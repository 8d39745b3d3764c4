package ops

import "context"

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
	ctx, end := s.bound(ctx, e)
	return ctx, end, nil
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
