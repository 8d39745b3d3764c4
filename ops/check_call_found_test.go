package ops_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// CheckCall, as a read-only server runs it on a role that may only read,
// refuses a write call that names what does not exist as the operation
// would: a queue to pause, resume or run now, a breaker to reset or open,
// with the operation's own error; ids of a retry or a discard of which
// none is in one DLQ alone, not found (each in no DLQ) or ambiguous (in
// several, with the same call in each of them as the steps); ids of a
// restore of which none is in the archive. A call by ids of which one
// would move is a call a server makes, and passes, as do calls on what
// exists. Nothing changes.
func TestCheckCallRefusesWhatIsNotThere(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, dbURL)
	rw := newService(t, owner, ops.Options{})
	first := pgtest.DLQStart()
	a, b := newQueueAt(t, owner, first, nil), newQueueAt(t, owner, first, nil)
	ida := pgtest.DeadLetterN(t, owner, a, 3, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	pgtest.DeadLetter(t, owner, b, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	shared, only, gone := ida[0], ida[1], ida[2] // shared is in both DLQs
	if r, err := rw.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{gone}, Filter: ops.DeadFilter{Queue: a}}); err != nil || r.Discarded != 1 {
		t.Fatalf("discard %d: %+v, %v", gone, r, err)
	}
	missing := pgtest.MissingDLQID()
	breaker := uniqueName("http:bank")
	if err := owner.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}

	pgtest.Exec(t, dbURL, "CREATE ROLE callreader LOGIN PASSWORD 'pw'")
	t.Cleanup(func() {
		pgtest.Exec(t, dbURL, "DROP OWNED BY callreader")
		pgtest.Exec(t, dbURL, "DROP ROLE callreader")
	})
	pgtest.Exec(t, dbURL, "GRANT USAGE ON SCHEMA pgmq, pgbus TO callreader; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO callreader")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("callreader", "pw")
	reader, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	ro := newService(t, reader, ops.Options{ReadOnly: true})
	before := fmt.Sprint(inDLQ(t, owner, a, shared), inDLQ(t, owner, a, only), inDLQ(t, owner, b, shared), inDLQ(t, owner, a, gone))

	// What the operations answer: their errors, and the outcome of each
	// id in a dry run.
	_, pauseErr := rw.QueuePause(ctx, ops.QueueRequest{Queue: "nosuch"})
	_, runErr := rw.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: "nosuch", DryRun: true})
	_, resetErr := rw.CircuitReset(ctx, ops.CircuitResetRequest{Name: "nosuch"})
	_, openErr := rw.CircuitOpen(ctx, ops.CircuitOpenRequest{Name: "nosuch", For: time.Hour})
	for _, c := range []struct {
		op   string
		req  any
		want error
	}{
		{ops.OpQueuePause, ops.QueueRequest{Queue: "nosuch"}, pauseErr},
		{ops.OpQueueResume, ops.QueueRequest{Queue: "nosuch"}, pauseErr},
		{ops.OpQueueRunNow, ops.QueueRunNowRequest{Queue: "nosuch"}, runErr},
		{ops.OpCircuitReset, ops.CircuitResetRequest{Name: "nosuch"}, resetErr},
		{ops.OpCircuitOpen, ops.CircuitOpenRequest{Name: "nosuch", For: time.Hour}, openErr},
	} {
		if !errors.Is(c.want, ops.ErrNotFound) {
			t.Fatalf("%s %+v on a writable service: %v; want not found", c.op, c.req, c.want)
		}
		got := ro.CheckCall(ctx, c.op, c.req)
		if !errors.Is(got, ops.ErrNotFound) || got.Error() != c.want.Error() || fmt.Sprint(ops.HintsOf(got)) != fmt.Sprint(ops.HintsOf(c.want)) {
			t.Errorf("CheckCall %s %+v: %v, steps %+v; want the operation's %v, steps %+v", c.op, c.req, got, ops.HintsOf(got), c.want, ops.HintsOf(c.want))
		}
	}

	outcome := func(r ops.DLQRetry, err error) ops.IDOutcome {
		t.Helper()
		if err != nil || len(r.Outcomes) == 0 {
			t.Fatalf("retry dry run: %+v, %v", r, err)
		}
		return r.Outcomes[0]
	}
	notThere := []struct {
		op   string
		req  any
		kind string
		says string
		next []ops.Hint
	}{
		{ops.OpDLQRetry, ops.DLQRetryRequest{IDs: []int64{missing}, Filter: ops.DeadFilter{Queue: a}}, ops.KindNotFound,
			outcome(rw.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{missing}, Filter: ops.DeadFilter{Queue: a}, DryRun: true})).Error,
			[]ops.Hint{{Op: ops.OpDLQList, Args: map[string]any{"queue": a}}}},
		{ops.OpDLQRetry, ops.DLQRetryRequest{IDs: []int64{missing, gone}}, ops.KindNotFound, "none of the 2 ids given was found", nil},
		{ops.OpDLQRetry, ops.DLQRetryRequest{IDs: []int64{shared}}, ops.KindInvalid,
			outcome(rw.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{shared}, DryRun: true})).Error,
			[]ops.Hint{{Op: ops.OpDLQRetry, Args: map[string]any{"queue": a + "_dlq", "ids": []int64{shared}}}, {Op: ops.OpDLQRetry, Args: map[string]any{"queue": b + "_dlq", "ids": []int64{shared}}}}},
		{ops.OpDLQDiscard, ops.DLQDiscardRequest{IDs: []int64{shared, missing}}, ops.KindInvalid, "none of the 2 ids given is in one DLQ alone",
			[]ops.Hint{{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": a + "_dlq", "ids": []int64{shared}}}, {Op: ops.OpDLQDiscard, Args: map[string]any{"queue": b + "_dlq", "ids": []int64{shared}}}}},
		{ops.OpDLQRestore, ops.DLQRestoreRequest{Queue: a, IDs: []int64{missing}}, ops.KindNotFound, "is not in the archive of " + a + "_dlq",
			[]ops.Hint{{Op: ops.OpDLQDiscarded, Args: map[string]any{"queue": a}}}},
		{ops.OpDLQRestore, ops.DLQRestoreRequest{Queue: a, IDs: []int64{only}, DryRun: true}, ops.KindNotFound, "is in " + a + "_dlq already", nil},
	}
	for _, c := range notThere {
		err := ro.CheckCall(ctx, c.op, c.req)
		if ops.ErrorKind(err) != c.kind || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("CheckCall %s %+v: %s %v; want %s saying %q", c.op, c.req, ops.ErrorKind(err), err, c.kind, c.says)
			continue
		}
		for _, h := range c.next {
			if !hasHint(ops.HintsOf(err), h.Op, h.Args) {
				t.Errorf("CheckCall %s %+v: steps %+v; want %+v among them", c.op, c.req, ops.HintsOf(err), h)
			}
		}
	}

	// Calls a server makes pass: one id of those given moves.
	for _, c := range []struct {
		op  string
		req any
	}{
		{ops.OpQueuePause, ops.QueueRequest{Queue: a}},
		{ops.OpQueueResume, ops.QueueRequest{Queue: a}},
		{ops.OpQueueRunNow, ops.QueueRunNowRequest{Queue: a}},
		{ops.OpCircuitReset, ops.CircuitResetRequest{Name: breaker}},
		{ops.OpCircuitOpen, ops.CircuitOpenRequest{Name: breaker, For: time.Hour}},
		{ops.OpDLQRetry, ops.DLQRetryRequest{IDs: []int64{only}}},
		{ops.OpDLQRetry, ops.DLQRetryRequest{IDs: []int64{shared, missing}, Filter: ops.DeadFilter{Queue: b}}},
		{ops.OpDLQRetry, ops.DLQRetryRequest{IDs: []int64{shared, only, missing}}},
		{ops.OpDLQDiscard, ops.DLQDiscardRequest{IDs: []int64{only, missing}, Filter: ops.DeadFilter{Queue: a}}},
		{ops.OpDLQRestore, ops.DLQRestoreRequest{Queue: a, IDs: []int64{gone, missing}}},
	} {
		if err := ro.CheckCall(ctx, c.op, c.req); err != nil {
			t.Errorf("CheckCall %s %+v: %v; want it passed", c.op, c.req, err)
		}
	}
	if after := fmt.Sprint(inDLQ(t, owner, a, shared), inDLQ(t, owner, a, only), inDLQ(t, owner, b, shared), inDLQ(t, owner, a, gone)); after != before {
		t.Errorf("the checks moved messages: before %s, after %s", before, after)
	}
}
