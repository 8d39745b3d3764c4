package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A group's key that no DLQ holds any more (a migration regrouped the
// error texts, or the group's last message left) selects nothing, and
// every call that takes a group says so: a list or a summary in a note,
// a retry or discard by filter, dry run or not, as not found; each with
// the summary of the other filters as its next step. A key whose group is
// there but which the other filters exclude is no such case. Nothing
// moves. The calls without a queue read every DLQ, on a database of the
// test's own: on the shared one, other tests' queues, made and dropped
// all the while, could cut every read of them short (the queues changed
// during the read) on a busy machine.
func TestGroupKeyHeldNowhere(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "mail", Class: "Bounce", Message: "mailbox full"})
	kept := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "mail", Class: "Timeout", Message: "smtp timed out"})
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, ErrorClass: "Bounce"}})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of %s: %+v, %v", q, sum, err)
	}
	left := sum.Groups[0].Group
	// The group's last message leaves.
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q, Group: left}}); err != nil || r.Retried != 2 {
		t.Fatalf("retry of group %s: %+v, %v", left, r, err)
	}
	// A key from before a migration regrouped its texts.
	regrouped := "9906b02f-1b2d-3e4f-8a9b-0c1d2e3f4a5b"

	for _, key := range []string{left, regrouped} {
		for _, f := range []ops.DeadFilter{{Queue: q, Kind: "mail", Group: key}, {Kind: "mail", Group: key}} {
			summaryNext := map[string]any{"kind": "mail", "queue": nil, "group": nil}
			if f.Queue != "" {
				summaryNext["queue"] = f.Queue
			}
			wantText := func(what, text string) {
				t.Helper()
				for _, w := range []string{"no dead-letter group has key " + key, "an upgrade groups error texts differently", "last message", "list the groups"} {
					if !strings.Contains(text, w) {
						t.Errorf("%s by group %s (queue %q): %q does not say %q", what, key, f.Queue, text, w)
					}
				}
			}
			wantNext := func(what string, next []ops.Hint) {
				t.Helper()
				if !hasHint(next, ops.OpDLQSummary, summaryNext) {
					t.Errorf("%s by group %s (queue %q): next %+v; want the summary of the other filters", what, key, f.Queue, next)
				}
			}
			page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: 10})
			if err != nil || len(page.Items) != 0 || len(page.Notes) != 1 {
				t.Fatalf("list by group %s (queue %q): %+v, %v; want an empty page with a note", key, f.Queue, page, err)
			}
			wantText("list", page.Notes[0])
			wantNext("list", page.Next)

			groups, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: f})
			if err != nil || len(groups.Groups) != 0 || len(groups.Notes) != 1 {
				t.Fatalf("summary by group %s (queue %q): %+v, %v; want no group, with a note", key, f.Queue, groups, err)
			}
			wantText("summary", groups.Notes[0])
			wantNext("summary", groups.Next)

			wantNotFound := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ops.ErrNotFound) {
					t.Fatalf("%s by group %s (queue %q): %v; want not found", what, key, f.Queue, err)
				}
				wantText(what, err.Error())
				wantNext(what, ops.HintsOf(err))
			}
			_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, DryRun: true})
			wantNotFound("retry dry run", err)
			_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f})
			wantNotFound("retry", err)
			_, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, DryRun: true})
			wantNotFound("discard dry run", err)
			_, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Confirm: true})
			wantNotFound("discard", err)
			wantNotFound("retry checked", svc.CheckCall(ctx, ops.OpDLQRetry, ops.DLQRetryRequest{Filter: f}))
		}
	}
	if !inDLQ(t, s, q, kept[0]) {
		t.Fatal("a call by a group held nowhere moved another group's message")
	}

	// A group that is there, which the other filters exclude: an empty
	// result, without a word about keys.
	sum, err = svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of %s: %+v, %v", q, sum, err)
	}
	f := ops.DeadFilter{Queue: q, Kind: "sms", Group: sum.Groups[0].Group}
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: 10})
	if err != nil || len(page.Items) != 0 || len(page.Notes) != 0 {
		t.Fatalf("list of a group the kind excludes: %+v, %v; want an empty page without notes", page, err)
	}
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f}); err != nil || r.Retried != 0 {
		t.Fatalf("retry of a group the kind excludes: %+v, %v; want none retried, no error", r, err)
	}
}
