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
	t.Parallel()
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

// Naming or reading the caller of a nil context answers as for an empty
// one rather than panicking: naming one cannot return an error.
func TestCallerOfNilContext(t *testing.T) {
	t.Parallel()
	var noContext context.Context
	var got ops.Caller
	callWithoutPanic(t, "CallerFrom(nil)", func() error { got = ops.CallerFrom(noContext); return nil })
	if got != (ops.Caller{Client: "unknown"}) {
		t.Errorf("CallerFrom(nil) = %+v, want the unknown caller", got)
	}
	named := ops.Caller{Client: "cli", Transport: ops.TransportCLI}
	callWithoutPanic(t, "WithCaller(nil, ...)", func() error { got = ops.CallerFrom(ops.WithCaller(noContext, named)); return nil })
	if got != named {
		t.Errorf("caller named on a nil context = %+v, want %+v", got, named)
	}
	var client string
	callWithoutPanic(t, "WithClient(nil, ...)", func() error { client = ops.ClientFrom(ops.WithClient(noContext, "mcp:agent")); return nil })
	if client != "mcp:agent" {
		t.Errorf("client named on a nil context = %q, want mcp:agent", client)
	}
}

// A nil Service, or one ops.New did not make, refuses every call; asked
// what it allows, it says read-only and no payloads, the answers that let
// a front end offer nothing it would refuse and show nothing it hides.
func TestNilServiceIsReadOnlyWithoutPayloads(t *testing.T) {
	t.Parallel()
	for name, svc := range map[string]*ops.Service{"nil service": nil, "service New did not make": {}} {
		var readOnly, payloads bool
		var policy ops.PayloadPolicy
		callWithoutPanic(t, "asking a "+name, func() error {
			readOnly, payloads, policy = svc.ReadOnly(), svc.AllowsPayloads(), svc.PayloadPolicy()
			return nil
		})
		if !readOnly || payloads || policy.PayloadsAllowed || policy.SafeFields == nil || len(policy.SafeFields) != 0 {
			t.Errorf("%s: read-only %v, payloads %v, policy %+v; want read-only, no payloads, no safe fields", name, readOnly, payloads, policy)
		}
	}
	svc := newService(t, testStore(t), ops.Options{AllowPayloads: true, SafeFields: []string{"tenant"}})
	if svc.ReadOnly() || !svc.AllowsPayloads() || !svc.PayloadPolicy().PayloadsAllowed || len(svc.PayloadPolicy().SafeFields) != 1 {
		t.Errorf("service of ops.New: read-only %v, payloads %v, policy %+v; want what its options say", svc.ReadOnly(), svc.AllowsPayloads(), svc.PayloadPolicy())
	}
}
