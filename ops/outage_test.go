//go:build linux || darwin

package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// TestStoppedDatabaseSaysWaitAndCallAgain: while the database is stopped,
// calls fail with ErrUnavailable, saying the database does not answer, what
// a write changed (nothing, when it reached no database) and to call again
// once it answers, pointing at health; HealthOrUnreachable answers the
// verdict UNREACHABLE rather than failing. Once the database is back, the
// same service works without being opened again.
func TestStoppedDatabaseSaysWaitAndCallAgain(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	const queue = "outage"
	pgtest.CreateQueue(t, st, queue)
	svc := newService(t, st, ops.Options{})
	send := func() error {
		_, err := svc.Send(ctx, ops.SendRequest{Queue: queue, Payload: []byte(`{"n":1}`)})
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	pgtest.DeadLetterN(t, st, queue, 3, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	dead := ops.DeadFilter{Queue: queue}
	retryDry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: dead, DryRun: true})
	if err != nil || retryDry.Expect == "" {
		t.Fatalf("retry dry run = %+v, %v; want an expect", retryDry, err)
	}
	discardDry, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: dead, DryRun: true})
	if err != nil || discardDry.Expect == "" {
		t.Fatalf("discard dry run = %+v, %v; want an expect", discardDry, err)
	}

	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
		says []string
	}{
		{"Send", send, []string{"nothing was changed"}},
		{"DLQList", func() error { _, err := svc.DLQList(ctx, ops.DLQListRequest{}); return err }, nil},
		{"Health", func() error { _, err := svc.Health(ctx); return err }, nil},
		{"DLQRestore", func() error {
			_, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: queue, IDs: []int64{1}})
			return err
		}, []string{"nothing was changed"}},
		// Guarded by their dry runs, they move their set in one
		// transaction: no steps done before stay.
		{"DLQRetry guarded", func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: dead, Expect: retryDry.Expect})
			return err
		}, []string{"nothing was changed"}},
		{"DLQDiscard guarded", func() error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: dead, Expect: discardDry.Expect, Confirm: true})
			return err
		}, []string{"nothing was changed"}},
		// Unguarded, it moves in steps, but fails at its first: none
		// done before it stays.
		{"DLQRetry", func() error { _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: dead}); return err }, []string{"nothing was changed"}},
		{"DLQDiscarded", func() error {
			_, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: queue}})
			return err
		}, nil},
	}
	for _, c := range calls {
		err := c.call()
		var oe *ops.Error
		if !errors.Is(err, ops.ErrUnavailable) || !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an *ops.Error wrapping ErrUnavailable", c.name, err)
			continue
		}
		for _, want := range append(c.says, "the database does not answer", "try the call again once the database answers") {
			if !strings.Contains(oe.Msg, want) {
				t.Errorf("%s: %q does not say %q", c.name, oe.Msg, want)
			}
		}
		if strings.Contains(oe.Msg, "stay done") {
			t.Errorf("%s: %q speaks of steps done before, which a call that failed at its first step has none of", c.name, oe.Msg)
		}
		if !hasHint(oe.Hints, ops.OpHealth, nil) {
			t.Errorf("%s: hints %+v do not point at health", c.name, oe.Hints)
		}
	}
	h, err := svc.HealthOrUnreachable(ctx)
	if err != nil {
		t.Fatalf("HealthOrUnreachable while the database is stopped: %v, want a verdict", err)
	}
	if h.Status != ops.HealthUnreachable || len(h.Reasons) != 1 || h.Reasons[0].Code != "database_unreachable" ||
		!strings.Contains(h.Reasons[0].Message, "does not answer") || !hasHint(h.Reasons[0].Next, ops.OpHealth, nil) {
		t.Errorf("HealthOrUnreachable while the database is stopped: %+v, want UNREACHABLE with one reason database_unreachable pointing at health", h)
	}

	pgtest.StartCluster(t, dir)
	if err := send(); err != nil {
		t.Fatalf("Send once the database is back: %v", err)
	}
	if h, err := svc.HealthOrUnreachable(ctx); err != nil || h.Status == ops.HealthUnreachable {
		t.Errorf("HealthOrUnreachable once the database is back: %s, %v", h.Status, err)
	}
	if n := pgtest.Live(t, st, queue+"_dlq"); n != 3 {
		t.Errorf("the DLQ holds %d messages, want the 3 no refused call moved", n)
	}
	if n := pgtest.Live(t, st, queue); n != 2 {
		t.Errorf("the queue holds %d messages, want 2: the sends before and after the outage, none from the refused one", n)
	}
}
