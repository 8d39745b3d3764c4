package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A kind's backoff under a millisecond, as a bare number meant as seconds
// is (Backoff: 5, 5ns), is refused as a queue's is, naming the field and
// a time.Duration to give, where it retried at once and used up the
// attempts in a burst; 0 (retry at once) and 1ms are taken.
func TestKindBackoffUnderAMillisecondIsRefused(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := uniqueName("q")
	noop := func(context.Context, *engine.Job) error { return nil }
	policy := func(edit func(*engine.RetryPolicy)) *engine.RetryPolicy {
		p := engine.DefaultRetryPolicy()
		edit(&p)
		return &p
	}
	for _, c := range []struct {
		what string
		opts engine.HandlerOptions
		says string // "" when taken
	}{
		{"backoff 5", engine.HandlerOptions{Retry: policy(func(p *engine.RetryPolicy) { p.Backoff = 5 })},
			"HandlerOptions.Retry.Backoff 5ns is shorter than 1ms"},
		{"backoff max 300", engine.HandlerOptions{Retry: policy(func(p *engine.RetryPolicy) { p.Backoff, p.BackoffMax = 0, 300 })},
			"HandlerOptions.Retry.BackoffMax 300ns is shorter than 1ms"},
		{"polynomial backoff max 300", engine.HandlerOptions{Retry: policy(func(p *engine.RetryPolicy) { p.Strategy, p.BackoffMax = store.BackoffPolynomial, 300 })},
			"HandlerOptions.Retry.BackoffMax 300ns is shorter than 1ms"},
		{"error policy's backoff 5", engine.HandlerOptions{Policies: []engine.ErrorPolicy{{Is: errTransient, Retry: policy(func(p *engine.RetryPolicy) { p.Backoff = 5 })}}},
			"HandlerOptions.Policies[0].Retry.Backoff 5ns is shorter than 1ms"},
		{"backoff 0", engine.HandlerOptions{Retry: policy(func(p *engine.RetryPolicy) { p.Backoff = 0 })}, ""},
		{"backoff 1ms", engine.HandlerOptions{Retry: policy(func(p *engine.RetryPolicy) { p.Backoff, p.BackoffMax = time.Millisecond, time.Millisecond })}, ""},
	} {
		cl := pgtest.NewClient(t, s, q, nil)
		cl.Handle("k", noop, c.opts)
		err := cl.Validate()
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%s: Validate = %v; want it taken", c.what, err)
		case c.says != "" && (!errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "such as 5 * time.Second")):
			t.Errorf("%s: Validate = %v; want ErrInvalid saying %q and suggesting 5 * time.Second", c.what, err, c.says)
		}
	}
}
