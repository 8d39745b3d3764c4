package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A call on a nil Service, on one New did not make, or with a nil context
// answers an error that says what to pass, not a panic deep in the store:
// a read, a write and a bulk operation, the last two without writing.
func TestNilServiceOrContextRefused(t *testing.T) {
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	calls := []struct {
		method string
		call   func(*ops.Service, context.Context) error
	}{
		{"DLQList", func(svc *ops.Service, ctx context.Context) error {
			_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
			return err
		}},
		{"QueuePause", func(svc *ops.Service, ctx context.Context) error {
			_, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q})
			return err
		}},
		{"DLQDiscard", func(svc *ops.Service, ctx context.Context) error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true})
			return err
		}},
	}
	var noContext context.Context
	cases := []struct {
		name string
		svc  *ops.Service
		ctx  context.Context
		want string
	}{
		{"nil service", nil, testContext(t), "call it on the Service that ops.New returns"},
		{"service New did not make", &ops.Service{}, testContext(t), "call it on the Service that ops.New returns"},
		{"nil context", svc, noContext, "needs a context: pass context.Background()"},
	}
	for _, c := range calls {
		for _, k := range cases {
			err := callWithoutPanic(t, c.method+" on a "+k.name, func() error { return c.call(k.svc, k.ctx) })
			if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "ops.Service."+c.method) || !strings.Contains(err.Error(), k.want) {
				t.Errorf("%s on a %s: %v; want ErrInvalid naming ops.Service.%s and saying %q", c.method, k.name, err, c.method, k.want)
			}
		}
	}
	if st, err := svc.QueueStats(testContext(t), ops.QueueStatsRequest{Queue: q}); err != nil || len(st.Queues) != 1 || st.Queues[0].Paused {
		t.Fatalf("queue after the refused calls: %+v, %v; want it there and not paused", st, err)
	}
}

// callWithoutPanic returns what call returns, failing the test, with what
// was called, when it panics instead.
func callWithoutPanic(t *testing.T, what string, call func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = nil
		}
	}()
	return call()
}
