package ops_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A discard is undone: the discarded messages are listed, restored with
// their ids into the DLQ (its summary counting them again), and a second
// restore, a purged id and the original of a corrected retry each get an
// outcome that says why not; the restore is audited.
func TestDLQRestoreUndoesDiscard(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	client := uniqueName("restorer")
	ctx := ops.WithClient(testContext(t), client)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 4, pgtest.DeadSpec{Kind: "charge", Class: "Timeout"})
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[:3], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || d.Discarded != 3 {
		t.Fatalf("discard = %+v, %v", d, err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[3:], Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"n": 99}`)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
	}
	pgtest.Exec(t, pgtest.URL(t), `DELETE FROM pgmq."a_`+q+`_dlq" WHERE msg_id = `+jsonNumber(ids[2]))

	list, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q, Kind: "charge"}})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("discarded = %+v, %v; want the 2 discarded and the retry's original", list, err)
	}
	restorable := map[int64]bool{}
	for _, it := range list.Items {
		restorable[it.MsgID] = it.Restorable
	}
	if !restorable[ids[0]] || !restorable[ids[1]] || restorable[ids[3]] {
		t.Fatalf("restorable = %v; want %d and %d, not %d", restorable, ids[0], ids[1], ids[3])
	}
	if !hasHint(list.Next, ops.OpDLQRestore, map[string]any{"queue": q, "dry_run": true}) {
		t.Fatalf("list's next steps %+v lack the restore", list.Next)
	}

	dry, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids[:2], DryRun: true})
	if err != nil || dry.Restored != 2 || dry.Outcomes[0].Outcome != ops.OutcomeWouldRestore || inDLQ(t, s, q, ids[0]) {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	// A dry run with ids that would not be restored names, as its next
	// step, the restore of those that would: the others would fail again.
	dry, err = svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: []int64{ids[0], ids[2], ids[1], ids[3]}, DryRun: true})
	if err != nil || dry.Restored != 2 || dry.NotFound != 1 || dry.Refused != 1 {
		t.Fatalf("dry run with a purged id and a retry's original = %+v, %v", dry, err)
	}
	var real []ops.Hint
	for _, h := range dry.Next {
		if h.Op == ops.OpDLQRestore {
			real = append(real, h)
		}
	}
	if len(real) != 1 || !slices.Equal(real[0].Args["ids"].([]int64), ids[:2]) || real[0].Args["dry_run"] != nil || !strings.Contains(real[0].Why, "would be restored") {
		t.Fatalf("dry run's next steps %+v; want one restore of %v alone, not as a dry run, saying they are those that would be restored", dry.Next, ids[:2])
	}
	res, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: []int64{ids[0], ids[1], ids[2], ids[3]}})
	if err != nil || res.Restored != 2 || res.NotFound != 1 || res.Refused != 1 || res.OK() {
		t.Fatalf("restore = %+v, %v", res, err)
	}
	want := []string{ops.OutcomeRestored, ops.OutcomeRestored, ops.OutcomeNotFound, ops.OutcomeRefused}
	for i, o := range res.Outcomes {
		if o.Outcome != want[i] {
			t.Errorf("outcome of %d = %+v, want %s", o.ID, o, want[i])
		}
	}
	if !strings.Contains(res.Outcomes[2].Error, "purged") || !strings.Contains(res.Outcomes[2].Error, "dead retention") || !strings.Contains(res.Outcomes[3].Error, "twice") {
		t.Errorf("outcomes do not say why: %+v", res.Outcomes)
	}
	if !hasHint(res.Next, ops.OpDLQDiscarded, map[string]any{"queue": q}) || !hasHint(res.Next, ops.OpDLQList, map[string]any{"queue": q}) {
		t.Errorf("restore's next steps %+v lack the lists", res.Next)
	}
	if !inDLQ(t, s, q, ids[0]) || !inDLQ(t, s, q, ids[1]) {
		t.Fatal("the restored messages are not in the DLQ")
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || sum.Total != 2 {
		t.Fatalf("summary after the restore = %+v, %v; want 2 dead", sum, err)
	}
	again, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids[:1]})
	if err != nil || again.NotFound != 1 || !strings.Contains(again.FirstError, "restored already") {
		t.Fatalf("restore again = %+v, %v", again, err)
	}
	rows := auditRows(t, s, client)
	if len(rows) == 0 || rows[len(rows)-1].Tool != ops.OpDLQRestore || !strings.Contains(rows[len(rows)-1].Arguments, jsonNumber(ids[0])) {
		t.Fatalf("audit rows %+v lack the restore", rows)
	}
}

// Bad requests are refused with what to do, before anything moves, and a
// read-only service refuses to restore.
func TestDLQRestoreRefusesBadRequests(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	for _, c := range []struct {
		req  ops.DLQRestoreRequest
		kind error
		says string
	}{
		{ops.DLQRestoreRequest{IDs: []int64{1}}, ops.ErrInvalid, "queue is required"},
		{ops.DLQRestoreRequest{Queue: q}, ops.ErrInvalid, "no ids given"},
		{ops.DLQRestoreRequest{Queue: q, IDs: []int64{-1}}, ops.ErrInvalid, "positive"},
		{ops.DLQRestoreRequest{Queue: q, IDs: make([]int64, ops.MaxIDs+1)}, ops.ErrInvalid, "at most"},
		{ops.DLQRestoreRequest{Queue: uniqueName("nosuch"), IDs: []int64{1}}, ops.ErrNotFound, "has no dead-letter queue"},
	} {
		_, err := svc.DLQRestore(ctx, c.req)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) || len(ops.HintsOf(err)) == 0 {
			t.Errorf("restore %+v: %v (hints %v), want %v saying %q with a next step", c.req, err, ops.HintsOf(err), c.kind, c.says)
		}
	}
	res, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: []int64{math.MaxInt64}})
	if err != nil || res.NotFound != 1 {
		t.Fatalf("restore of the largest id = %+v, %v", res, err)
	}
	if _, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{}); !errors.Is(err, ops.ErrInvalid) {
		t.Errorf("list without a queue: %v, want ErrInvalid", err)
	}
	ro := newService(t, s, ops.Options{ReadOnly: true})
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k"})
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids}); !errors.Is(err, ops.ErrReadOnly) || inDLQ(t, s, q, ids[0]) {
		t.Fatalf("restore on a read-only service = %v, want ErrReadOnly and nothing restored", err)
	}
	if l, err := ro.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}}); err != nil || len(l.Items) != 1 {
		t.Fatalf("list on a read-only service = %+v, %v", l, err)
	}
}

func jsonNumber(id int64) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// A discard that moved messages names, among its next steps, how to undo
// it: the list of what was discarded from each DLQ it moved from, whose
// ids a restore takes; a dry run, which moved nothing, names none.
func TestDiscardNamesItsUndo(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout"})
	undo := map[string]any{"queue": q}
	dry, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || hasHint(dry.Next, ops.OpDLQDiscarded, nil) {
		t.Fatalf("a dry run's next steps %+v (%v) name an undo of what it did not move", dry.Next, err)
	}
	byIDs, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || !hasHint(byIDs.Next, ops.OpDLQDiscarded, undo) {
		t.Fatalf("a discard by ids: next steps %+v (%v) lack the list to restore from", byIDs.Next, err)
	}
	if !slices.ContainsFunc(byIDs.Next, func(h ops.Hint) bool {
		return h.Op == ops.OpDLQDiscarded && strings.Contains(h.Why, "until the archive is purged or the queue's dead retention")
	}) {
		t.Errorf("a discard's undo %+v does not say retention deletes the archive too", byIDs.Next)
	}
	if slices.ContainsFunc(byIDs.Next, func(h ops.Hint) bool { return h.Op == ops.OpDLQDiscarded && h.Args["kind"] != nil }) {
		t.Errorf("a discard by ids names a kind in its undo: %+v", byIDs.Next)
	}
	// By filter, the list is narrowed as the discard was, so that it shows
	// what the discard moved rather than every discard before it.
	byFilter, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q, Kind: "charge", ErrorClass: "Timeout"}, Confirm: true})
	narrowed := map[string]any{"queue": q, "kind": "charge", "error_class": "Timeout"}
	if err != nil || byFilter.Discarded != 2 || !hasHint(byFilter.Next, ops.OpDLQDiscarded, narrowed) {
		t.Fatalf("a discard by filter = %+v, %v; want 2 discarded and the list of them to restore from", byFilter, err)
	}
}

// The discarded list says how to read an error it cut: the archive has no
// page of its own, so showing the message takes restoring it first.
func TestDiscardedCutErrorsSayHowToReadThem(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: strings.Repeat("upstream said no; ", 100)})
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	list, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("discarded = %+v, %v; want the one message", list, err)
	}
	if !slices.ContainsFunc(list.Notes, func(n string) bool { return strings.Contains(n, "once restored") }) {
		t.Errorf("notes %q do not say that a cut error is read in full once the message is restored", list.Notes)
	}
}
