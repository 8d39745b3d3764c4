package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Send and SendMany, which the front ends send through, refuse a deadline
// that has passed, or that comes before the delay ends, saying what to
// change, and send nothing.
func TestSendsRefuseADeadlineTheyCannotMeet(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	payload := json.RawMessage(`{"n": 1}`)
	paths := map[string]func(context.Context, string, time.Duration, time.Time) error{
		"Send": func(ctx context.Context, q string, delay time.Duration, deadline time.Time) error {
			_, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: payload, Delay: delay, Deadline: deadline})
			return err
		},
		"SendMany": func(ctx context.Context, q string, delay time.Duration, deadline time.Time) error {
			_, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Payloads: []json.RawMessage{payload, payload}, Delay: delay, Deadline: deadline})
			return err
		},
	}
	for name, send := range paths {
		q := newQueue(t, s, nil)
		for _, bad := range []struct {
			what     string
			delay    time.Duration
			deadline time.Time
			says     string
		}{
			{"a past deadline", 0, time.Now().Add(-time.Minute), "has passed"},
			{"a deadline before the delay ends", 10 * time.Second, time.Now().Add(5 * time.Second), "before the delay of 10s ends"},
		} {
			if err := send(ctx, q, bad.delay, bad.deadline); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), bad.says) {
				t.Errorf("%s with %s: %v; want ErrInvalid saying %q", name, bad.what, err, bad.says)
			}
			if n := pgtest.Live(t, s, q); n != 0 {
				t.Errorf("%s with %s: queue %s holds %d messages; want none sent", name, bad.what, q, n)
			}
		}
		if err := send(ctx, q, 10*time.Second, time.Now().Add(time.Minute)); err != nil {
			t.Errorf("%s with a 10s delay and a deadline in a minute: %v", name, err)
		}
		if n := pgtest.Live(t, s, q); n == 0 {
			t.Errorf("%s with a deadline after the delay sent nothing", name)
		}
	}
}

// The operations layer judges a deadline by the rule the engine's sends
// apply, slack for measuring the server's clock included: a deadline a
// moment ago that a Go service's Client.Send takes, pgbus send and the
// MCP path take too, and one well past is refused by both.
func TestSendJudgesDeadlinesAsTheEngineDoes(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	c, err := engine.NewClient(s, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s, nil)
	for _, ago := range []time.Duration{300 * time.Millisecond, time.Minute} {
		deadline := svc.Now().Add(-ago)
		_, engineErr := c.Send(ctx, q, map[string]int{"n": 1}, engine.SendOptions{Deadline: deadline})
		_, opsErr := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`), Deadline: deadline})
		if (engineErr == nil) != (opsErr == nil) {
			t.Errorf("a deadline %s ago: Client.Send says %v, ops.Service.Send says %v; want the same answer", ago, engineErr, opsErr)
		}
		if opsErr != nil && (!errors.Is(opsErr, ops.ErrInvalid) || !strings.Contains(opsErr.Error(), "has passed")) {
			t.Errorf("a deadline %s ago: %v; want ErrInvalid saying it has passed", ago, opsErr)
		}
	}
	if n := pgtest.Live(t, s, q); n != 2 {
		t.Errorf("queue %s holds %d messages; want the 2 sends of the deadline a moment ago", q, n)
	}
}
