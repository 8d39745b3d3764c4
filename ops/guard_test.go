package ops_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

func discardedIDs(moved []ops.DeadID) []int64 {
	ids := make([]int64, len(moved))
	for i, m := range moved {
		ids[i] = m.MsgID
	}
	slices.Sort(ids)
	return ids
}

// A dry run of a discard by filter lists what it would discard and
// discards nothing; the real call with its expect discards the same
// messages. Both are audited, the dry run as one.
func TestDiscardDryRunMatchesRealDiscard(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent")
	ctx := ops.WithClient(testContext(t), client)
	bad := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Class: "BadInput"})
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "Timeout"})
	f := ops.DeadFilter{Queue: q, ErrorClass: "BadInput"}

	dry, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, DryRun: true})
	if err != nil || !dry.DryRun || dry.Discarded != 3 || !slices.Equal(discardedIDs(dry.Moved), bad) || dry.Expect == "" {
		t.Fatalf("dry run = %+v, %v; want the 3 BadInput ids %v and an expect", dry, err, bad)
	}
	if !hasHint(dry.Next, ops.OpDLQDiscard, map[string]any{"expect": dry.Expect, "error_class": "BadInput", "queue": q}) {
		t.Fatalf("dry run's next steps %+v do not say how to discard exactly these", dry.Next)
	}
	if pgtest.Live(t, s, q+"_dlq") != 5 || pgtest.Archived(t, s, q+"_dlq") != 0 {
		t.Fatal("the dry run moved messages")
	}
	real, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Expect: dry.Expect, Confirm: true})
	if err != nil || real.DryRun || real.Discarded != 3 || !slices.Equal(discardedIDs(real.Moved), discardedIDs(dry.Moved)) {
		t.Fatalf("real discard = %+v, %v; want what the dry run listed", real, err)
	}
	if pgtest.Live(t, s, q+"_dlq") != 2 || pgtest.Archived(t, s, q+"_dlq") != 3 {
		t.Fatal("the real discard did not move exactly the 3 listed")
	}
	rows := auditRows(t, s, client)
	if len(rows) != 2 || !strings.Contains(rows[0].Arguments, `"dry_run": true`) || !strings.Contains(rows[1].Arguments, dry.Expect) {
		t.Fatalf("audit rows = %+v; want the dry run, then the call with its expect", rows)
	}
}

// Without a go-ahead a discard by filter is refused and moves nothing;
// the refusal says to run a dry run and confirm.
func TestDiscardByFilterNeedsConfirm(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	_, err := svc.DLQDiscard(testContext(t), ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "confirm") ||
		!hasHint(ops.HintsOf(err), ops.OpDLQDiscard, map[string]any{"dry_run": true, "queue": q, "limit": 10}) {
		t.Fatalf("discard by filter without confirm = %v (hints %+v)", err, ops.HintsOf(err))
	}
	if pgtest.Live(t, s, q+"_dlq") != 2 {
		t.Fatal("a refused discard moved messages")
	}
}

// A retry given the expect of its dry run is refused, moving nothing, once
// a new dead letter matches the filter; the refusal is audited and says to
// run the dry run again. Ids given as expect work as the token does.
func TestRetryExpectRefusedAfterChange(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent")
	ctx := ops.WithClient(testContext(t), client)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "Timeout"})
	f := ops.DeadFilter{Queue: q, ErrorClass: "Timeout"}
	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, DryRun: true})
	if err != nil || dry.Expect == "" || !hasHint(dry.Next, ops.OpDLQRetry, map[string]any{"expect": dry.Expect}) {
		t.Fatalf("dry run = %+v, %v; want an expect and a hint passing it", dry, err)
	}
	ids = append(ids, pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Class: "Timeout"})...)
	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Expect: dry.Expect})
	if !errors.Is(err, ops.ErrChanged) || !strings.Contains(err.Error(), "nothing was moved") ||
		!hasHint(ops.HintsOf(err), ops.OpDLQRetry, map[string]any{"dry_run": true, "error_class": "Timeout"}) {
		t.Fatalf("retry after a new dead letter = %v (hints %+v); want ErrChanged and a dry run to run again", err, ops.HintsOf(err))
	}
	if pgtest.Live(t, s, q+"_dlq") != 3 || pgtest.Live(t, s, q) != 0 {
		t.Fatal("a refused retry moved messages")
	}
	if rows := auditRows(t, s, client); len(rows) != 2 || !rows[1].IsError || !strings.Contains(rows[1].Result, "changed") {
		t.Fatalf("audit rows = %+v; want the refusal recorded as an error", rows)
	}

	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Expect: fmt.Sprintf("%d,%d", ids[0], ids[1])})
	if !errors.Is(err, ops.ErrChanged) {
		t.Fatalf("retry expecting 2 ids of the 3 = %v; want ErrChanged", err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Expect: fmt.Sprintf("%d, %d,%d", ids[2], ids[0], ids[1])})
	if err != nil || r.Retried != 3 || pgtest.Live(t, s, q+"_dlq") != 0 || pgtest.Live(t, s, q) != 3 {
		t.Fatalf("retry expecting the 3 ids = %+v, %v; want all 3 back in %s", r, err, q)
	}
	if _, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Expect: " , "}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("an expect of commas only = %v; want ErrInvalid", err)
	}
	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{ErrorClass: "Timeout"}, Expect: "1,2"})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "needs queue") {
		t.Fatalf("ids as expect without a queue = %v; want ErrInvalid asking for the queue", err)
	}
}

// asker is a person answering every question with yes or no, keeping the
// questions.
type asker struct {
	yes       bool
	questions []string
}

func (a *asker) ask(_ context.Context, q string) (bool, error) {
	a.questions = append(a.questions, q)
	return a.yes, nil
}

// With Ask, a discard by filter asks the person about the exact set:
// declined, nothing moves and the result and the audit log say so;
// accepted, the set asked about moves.
func TestDiscardAsksThePerson(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent")
	ctx := ops.WithClient(testContext(t), client)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "BadInput"})
	f := ops.DeadFilter{Queue: q, ErrorClass: "BadInput"}

	no := &asker{}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Confirm: true, Ask: no.ask})
	if err != nil || !d.Declined || d.Discarded != 0 || pgtest.Live(t, s, q+"_dlq") != 2 {
		t.Fatalf("declined discard = %+v, %v; want declined and nothing moved", d, err)
	}
	if len(no.questions) != 1 || !strings.Contains(no.questions[0], "Discard 2 dead messages of the DLQ of "+q) || !strings.Contains(no.questions[0], `"BadInput"`) ||
		!strings.Contains(no.questions[0], "kept until purged or the queue's dead retention") {
		t.Fatalf("questions = %q; want one naming the 2 messages and the filter", no.questions)
	}
	yes := &asker{yes: true}
	d, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Ask: yes.ask})
	if err != nil || d.Declined || d.Discarded != 2 || pgtest.Live(t, s, q+"_dlq") != 0 || pgtest.Archived(t, s, q+"_dlq") != 2 {
		t.Fatalf("accepted discard = %+v, %v; want the 2 discarded", d, err)
	}
	rows := auditRows(t, s, client)
	if len(rows) != 2 || !strings.Contains(rows[0].Result, `"declined": true`) || !strings.Contains(rows[0].Arguments, `"asked": true`) {
		t.Fatalf("audit rows = %+v; want the declined call recorded as declined", rows)
	}

	purge := &asker{}
	p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Ask: purge.ask})
	if err != nil || !p.Declined || p.Purged != 0 || pgtest.Archived(t, s, q+"_dlq") != 2 || len(purge.questions) != 1 {
		t.Fatalf("declined purge = %+v, %v (asked %q); want declined and nothing purged", p, err, purge.questions)
	}
}

// A dry run of a discard by ids reports would_discard and moves nothing,
// lists the ids it would discard, and names the real call.
func TestDiscardIDsDryRun(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	asked := append(slices.Clone(ids), ids[1]+1000)
	d, err := svc.DLQDiscard(testContext(t), ops.DLQDiscardRequest{IDs: asked, Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || !d.DryRun || d.Discarded != 2 || d.NotFound != 1 || d.Outcomes[0].Outcome != ops.OutcomeWouldDiscard ||
		d.Outcomes[2].Outcome != ops.OutcomeNotFound || pgtest.Live(t, s, q+"_dlq") != 2 {
		t.Fatalf("dry run by ids = %+v, %v; want 2 would_discard, 1 not found and nothing moved", d, err)
	}
	want := []ops.DeadID{{DLQ: q + "_dlq", MsgID: ids[0]}, {DLQ: q + "_dlq", MsgID: ids[1]}}
	if !reflect.DeepEqual(d.Moved, want) {
		t.Errorf("dry run by ids listed %+v; want %+v", d.Moved, want)
	}
	if !hasHint(d.Next, ops.OpDLQDiscard, map[string]any{"ids": ids, "queue": q, "dry_run": nil}) {
		t.Errorf("dry run by ids hints %+v; want the same call of the ids that would move, not as a dry run", d.Next)
	}
}

// A purge refused for want of a go-ahead writes its age as the rest of ops
// does (30d, not 720h0m0s; 1h30m, not 1h30m0s), and its hint gives the
// same age back; the archive is left as it was.
func TestPurgeNeedsConfirmWritesTheAge(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{})
	if _, err := svc.DLQDiscard(testContext(t), ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		age  time.Duration
		want string
	}{{30 * 24 * time.Hour, "30d"}, {90 * time.Minute, "1h30m"}} {
		_, err := svc.DLQPurge(testContext(t), ops.DLQPurgeRequest{Queue: q, OlderThan: c.age})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), " older than "+c.want+" for good") || strings.Contains(err.Error(), c.age.String()) ||
			!hasHint(ops.HintsOf(err), ops.OpDLQPurge, map[string]any{"queue": q, "older_than": c.want, "confirm": true}) {
			t.Errorf("purge of messages older than %s without confirm = %v (hints %+v); want it refused, saying %q", c.age, err, ops.HintsOf(err), c.want)
		}
	}
	if n := pgtest.Archived(t, s, q+"_dlq"); n != 1 {
		t.Fatalf("refused purges left %d archived, want 1", n)
	}
}

// A purge refused for want of a go-ahead says to check first where what
// it would delete shows: its own dry run, which counts it, and the
// archive of the queue's DLQ, which lists it (for every DLQ, the audit
// of discards); not the DLQ, which a purge leaves as it is.
func TestPurgeNeedsConfirmPointsAtWhatItWouldDelete(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	_, err := svc.DLQPurge(testContext(t), ops.DLQPurgeRequest{Queue: q, OlderThan: 24 * time.Hour})
	hints := ops.HintsOf(err)
	if !errors.Is(err, ops.ErrInvalid) || !hasHint(hints, ops.OpDLQPurge, map[string]any{"queue": q, "older_than": "1d", "dry_run": true}) ||
		!hasHint(hints, ops.OpDLQDiscarded, map[string]any{"queue": q}) || hasHint(hints, ops.OpDLQList, nil) {
		t.Errorf("purge of queue %s without confirm = %v, hints %+v; want its dry run and the DLQ's archive to check first", q, err, hints)
	}
	_, err = svc.DLQPurge(testContext(t), ops.DLQPurgeRequest{OlderThan: 0})
	hints = ops.HintsOf(err)
	if !hasHint(hints, ops.OpDLQPurge, map[string]any{"older_than": "0s", "dry_run": true}) || !hasHint(hints, ops.OpAudit, map[string]any{"tool": ops.OpDLQDiscard}) {
		t.Errorf("purge of every DLQ without confirm = %v, hints %+v; want its dry run and the audit of discards to check first", err, hints)
	}
}

// A purge refused for a negative age writes that age as the rest of ops
// does, not in Go's form (-1h30m0s), and leaves the archive as it was.
func TestPurgeNegativeAgeWritesTheAge(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{})
	if _, err := svc.DLQDiscard(testContext(t), ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		age  time.Duration
		want string
	}{{-720 * time.Hour, "-720h"}, {-90 * time.Minute, "-1h30m"}} {
		_, err := svc.DLQPurge(testContext(t), ops.DLQPurgeRequest{Queue: q, OlderThan: c.age, Confirm: true})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "older_than "+c.want+" is negative;") {
			t.Errorf("purge of messages older than %s = %v; want it refused, saying older_than %s is negative", c.age, err, c.want)
		}
	}
	if n := pgtest.Archived(t, s, q+"_dlq"); n != 1 {
		t.Fatalf("refused purges left %d archived, want 1", n)
	}
}
