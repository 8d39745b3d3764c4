package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Limits left at zero take the defaults: a page of DefaultPageSize, a bulk
// operation of DefaultBulkLimit.
func TestDLQDefaults(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, ops.DefaultBulkLimit+5, pgtest.DeadSpec{})
	f := ops.DeadFilter{Queue: q}

	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f})
	if err != nil || len(page.Items) != ops.DefaultPageSize || page.NextCursor == "" {
		t.Fatalf("list with limit 0 = %d items, cursor %q, %v; want %d and a cursor", len(page.Items), page.NextCursor, err, ops.DefaultPageSize)
	}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Confirm: true})
	if err != nil || d.Discarded != ops.DefaultBulkLimit || !d.LimitReached || !hasHint(d.Next, ops.OpDLQDiscard, nil) {
		t.Fatalf("discard by filter with limit 0 = %+v, %v; want %d and the limit reached", d, err, ops.DefaultBulkLimit)
	}
	if n := pgtest.Archived(t, s, q+"_dlq"); n != ops.DefaultBulkLimit {
		t.Fatalf("the DLQ's archive holds %d, want %d", n, ops.DefaultBulkLimit)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, DryRun: true})
	if err != nil || !r.DryRun || r.Retried != 5 || r.LimitReached || pgtest.Live(t, s, q+"_dlq") != 5 || pgtest.Live(t, s, q) != 0 {
		t.Fatalf("dry-run retry of the rest = %+v, %v", r, err)
	}
	if _, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q}); !errors.Is(err, ops.ErrInvalid) || pgtest.Archived(t, s, q+"_dlq") != ops.DefaultBulkLimit ||
		!hasHint(ops.HintsOf(err), ops.OpDLQPurge, map[string]any{"queue": q, "older_than": "0s", "confirm": true}) {
		t.Fatalf("purge without confirm = %v, hints %+v; want ErrInvalid, nothing deleted, and the confirmed purge as a next step", err, ops.HintsOf(err))
	}
	p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Confirm: true})
	if err != nil || p.Purged != ops.DefaultBulkLimit || pgtest.Archived(t, s, q+"_dlq") != 0 {
		t.Fatalf("purge = %+v, %v", p, err)
	}
	for label, req := range map[string]ops.DLQRetryRequest{
		"limit over the maximum": {Filter: f, Limit: ops.MaxBulkLimit + 1},
		"negative limit":         {Filter: f, Limit: -1},
		"ids and a limit":        {IDs: []int64{1}, Limit: 5},
		"ids and a filter":       {IDs: []int64{1}, Filter: ops.DeadFilter{Queue: q, Kind: "k"}},
		"a zero id":              {IDs: []int64{0}},
	} {
		if _, err := svc.DLQRetry(ctx, req); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("retry with %s = %v, want ErrInvalid", label, err)
		}
	}
	if n := pgtest.Live(t, s, q+"_dlq"); n != 5 {
		t.Fatalf("rejected requests moved messages: the DLQ holds %d, want 5", n)
	}
}

// Ids are per queue: an id in two DLQs is shown only with its queue.
func TestDLQShowLocatesTheDLQ(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	first := pgtest.DLQStart()
	qa, qb := newQueueAt(t, s, first, nil), newQueueAt(t, s, first, nil)
	a := pgtest.DeadLetterN(t, s, qa, 2, pgtest.DeadSpec{Message: "in a"})
	b := pgtest.DeadLetterN(t, s, qb, 1, pgtest.DeadSpec{Message: "in b"})
	if a[0] != first || b[0] != first || a[1] != first+1 {
		t.Fatalf("ids %v and %v; want both to start at %d", a, b, first)
	}
	_, err := svc.DLQShow(ctx, ops.DLQShowRequest{MsgID: first})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), qa+"_dlq") || !strings.Contains(err.Error(), qb+"_dlq") {
		t.Fatalf("show an id in two DLQs: %v; want ErrInvalid naming both", err)
	}
	hints := ops.HintsOf(err)
	if !hasHint(hints, ops.OpDLQShow, map[string]any{"queue": qa + "_dlq", "msg_id": first}) || !hasHint(hints, ops.OpDLQShow, map[string]any{"queue": qb + "_dlq", "msg_id": first}) {
		t.Fatalf("hints %+v; want one show per DLQ", hints)
	}
	for _, queue := range []string{qb, qb + "_dlq"} {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: queue, MsgID: first})
		if err != nil || m.DLQ != qb+"_dlq" || m.Queue != qb || m.DeadLetter == nil || m.DeadLetter.ErrorMessage != "in b" {
			t.Fatalf("show with queue %s = %+v, %v", queue, m, err)
		}
	}
	// qa's other id is in qa's DLQ only.
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{MsgID: a[1]})
	if err != nil || m.DLQ != qa+"_dlq" || m.DeadLetter.ErrorMessage != "in a" {
		t.Fatalf("show %d without queue = %+v, %v", a[1], m, err)
	}
	if _, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: qb, MsgID: a[1]}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("show %d in %s = %v, want ErrNotFound", a[1], qb, err)
	}
	if _, err := svc.DLQShow(ctx, ops.DLQShowRequest{MsgID: pgtest.MissingDLQID()}); !errors.Is(err, ops.ErrNotFound) || !hasHint(ops.HintsOf(err), ops.OpDLQList, nil) {
		t.Fatalf("show a missing id = %v, want ErrNotFound with a list hint", err)
	}
	if _, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: qa}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("show without an id = %v, want ErrInvalid", err)
	}
	if _, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: uniqueName("nope"), MsgID: first}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("show in a missing queue = %v, want ErrNotFound", err)
	}
}

// A message a handler refuses dies in the DLQ through a real worker, is
// inspected and retried through the operations, and then succeeds.
func TestDLQRoundTripThroughWorker(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	var fixed atomic.Bool
	var succeeded atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		if !fixed.Load() {
			return engine.NonRetryable(errors.New("the downstream refused the order"))
		}
		succeeded.Add(1)
		return nil
	})
	pgtest.Start(t, c)
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"order": 7}`)}); err != nil {
		t.Fatal(err)
	}

	var item ops.DeadItem
	pgtest.Eventually(t, time.Minute, "the message in the DLQ", func() bool {
		page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
		if err != nil || len(page.Items) != 1 {
			return false
		}
		item = page.Items[0]
		return true
	})
	if item.Reason != store.ReasonNonRetryable || item.SourceQueue != q || item.DLQ != q+"_dlq" || !strings.Contains(item.ErrorMessage, "refused the order") {
		t.Fatalf("dead item = %+v", item)
	}
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: item.MsgID, IncludePayload: true})
	if err != nil || m.DeadLetter == nil || m.DeadLetter.Source != store.SourceWorker || m.DeadLetter.Attempts == nil || *m.DeadLetter.Attempts != 1 || len(m.History) != 1 ||
		!m.PayloadShown || string(m.Payload) != `{"order":7}` {
		t.Fatalf("show = %+v, %v", m, err)
	}
	if !hasHint(m.Next, ops.OpDLQRetry, map[string]any{"queue": q + "_dlq", "ids": []int64{item.MsgID}}) {
		t.Fatalf("show's next steps %+v lack the retry", m.Next)
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(sum.Groups) != 1 || sum.Total != 1 || sum.Groups[0].Count != 1 || sum.Groups[0].SampleMsgIDs[0] != item.MsgID {
		t.Fatalf("summary = %+v, %v", sum, err)
	}

	fixed.Store(true)
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{item.MsgID}, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || r.Retried != 1 || !r.OK() || len(r.Moved) != 1 || r.Moved[0].Queue != q {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	pgtest.Eventually(t, time.Minute, "the retried message to succeed", func() bool { return succeeded.Load() == 1 && pgtest.Archived(t, s, q) == 1 })
	if pgtest.Live(t, s, q+"_dlq") != 0 {
		t.Fatal("the DLQ still holds the message")
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`" WHERE (headers->>'pgbus_dlq_retries')::int = 1 AND NOT headers ? 'pgbus_dead_letter'`); n != 1 {
		t.Fatalf("%d archived messages carry one trip and no block, want 1", n)
	}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{item.MsgID}, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || d.NotFound != 1 || d.OK() || d.Outcomes[0].Outcome != ops.OutcomeNotFound || !strings.Contains(d.FirstError, fmt.Sprint(item.MsgID)) {
		t.Fatalf("discard of a retried message = %+v, %v", d, err)
	}
}

// A history folds identical failures in a row into one entry with their
// count and first attempt, and lists each with FullHistory; a failure
// between two runs keeps them apart.
func TestHistoryFoldsRepeats(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{"n": 1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	fail := func(attempt int, msg string) store.Failure {
		return store.Failure{Attempt: attempt, Kind: "charge", ErrorClass: "HTTPError", ErrorMessage: msg}
	}
	for i, msg := range []string{"503", "503", "503", "400 bad amount", "503"} {
		if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[0], Failure: fail(i+1, msg)}}); err != nil {
			t.Fatal(err)
		}
	}
	last := fail(6, "503")
	moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 5, Failure: &last}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter: %v, %v", moved, err)
	}
	svc := newService(t, s, ops.Options{})
	show := func(full bool) []ops.Failure {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: moved[0].DLQMsgID, FullHistory: full})
		if err != nil {
			t.Fatal(err)
		}
		if m.FailureCount != 6 {
			t.Errorf("failure_count %d, want 6", m.FailureCount)
		}
		return m.History
	}
	var got []string
	for _, f := range show(false) {
		got = append(got, fmt.Sprintf("%d-%d:%s×%d", f.FirstAttempt, f.Attempt, f.ErrorMessage, max(f.Repeated, 1)))
	}
	if want := "1-3:503×3 0-4:400 bad amount×1 5-6:503×2"; strings.Join(got, " ") != want {
		t.Errorf("folded history %q, want %q", strings.Join(got, " "), want)
	}
	if full := show(true); len(full) != 6 || full[0].Repeated != 0 || full[5].Attempt != 6 {
		t.Errorf("full history: %+v", full)
	}
}

// The summary of more groups than one agent response holds lists the
// largest and says so; asked for All (a page a person scrolls) it lists
// every group the store returns, and past the store's cap it says that too.
func TestDLQSummaryAllAndTheCaps(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	const groups = store.MaxDeadGroups + 20
	// Five kinds by 104 classes: 520 groups of two.
	if err := s.BulkLoadDead(ctx, q, 2*groups, groups/5); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, s, ops.Options{})
	agent, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil {
		t.Fatal(err)
	}
	if !agent.Truncated || len(agent.Groups) >= 100 || agent.TotalGroups != groups || len(mustJSON(t, agent)) > ops.ResponseBudget ||
		!hasNote(agent.Notes, fmt.Sprintf("only the %d largest of %d groups are listed, so that the response stays under", len(agent.Groups), groups)) {
		t.Fatalf("for an agent: %d of %d groups (truncated %v), %d characters, notes %q; want the largest that fit, said so",
			len(agent.Groups), agent.TotalGroups, agent.Truncated, len(mustJSON(t, agent)), agent.Notes)
	}
	all, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Groups) != store.MaxDeadGroups || all.TotalGroups != groups || !all.Truncated || all.MessagesOmitted != 2*(groups-store.MaxDeadGroups) ||
		!hasNote(all.Notes, fmt.Sprintf("only the %d largest of %d groups are listed: the other %d groups hold %d of the %d dead messages",
			store.MaxDeadGroups, groups, groups-store.MaxDeadGroups, 2*(groups-store.MaxDeadGroups), 2*groups)) {
		t.Fatalf("all: %d of %d groups (truncated %v), notes %q; want the store's %d, said so", len(all.Groups), all.TotalGroups, all.Truncated, all.Notes, store.MaxDeadGroups)
	}
	var total int64
	for _, g := range all.Groups {
		total += g.Count
	}
	if all.Total != total || total <= agent.Total {
		t.Fatalf("all: total %d, groups sum to %d, the agent's %d", all.Total, total, agent.Total)
	}
	one, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, Kind: "kind_2", ErrorClass: "bench.Error7"}, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Groups) != 1 || one.Truncated || hasNote(one.Notes, "largest") {
		t.Fatalf("one group: %+v", one)
	}
}

// Bounds given in part keep the defaults of the fields left zero: a
// service that only raises the payload bound still shows error messages,
// backtraces and history, where the zero bounds cut them to nothing, or
// failed the call. A negative bound is refused when the service is made.
func TestPartialBoundsKeepTheOtherDefaults(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "connection refused", Trace: "main.go:1\nmain.go:2"})
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.Bounds{Payload: 64 << 10}})
	got, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeadLetter.ErrorMessage != "connection refused" || got.DeadLetter.Backtrace != "main.go:1\nmain.go:2" || len(got.History) != 1 {
		t.Fatalf("shown with partial bounds: message %q, backtrace %q, %d failures", got.DeadLetter.ErrorMessage, got.DeadLetter.Backtrace, len(got.History))
	}
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].ErrorMessage != "connection refused" {
		t.Fatalf("listed with partial bounds: %+v", list.Items)
	}
	if _, err := ops.New(s, ops.Options{Bounds: ops.Bounds{Payload: 1 << 10, History: -1}}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "Bounds.History") {
		t.Fatalf("New with a negative bound = %v, want ErrInvalid naming Bounds.History", err)
	}
}

// A dead message whose headers were no JSON object shows them as they
// were sent, not as the wrapping the DLQ keeps them in; a producer's own
// header of that wrapping's name, among others, shows as one of its
// headers.
func TestDLQShowGivesHeadersAsSent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	for _, sent := range []string{`7`, `["a", "b"]`, `"s"`, `{"trace": "t", "pgbus_original_headers": "p"}`} {
		var id int64
		if err := s.Pool().QueryRow(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers) VALUES (now(), '{}', $1) RETURNING msg_id`, sent).Scan(&id); err != nil {
			t.Fatal(err)
		}
		moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 5}})
		if err != nil || len(moved) != 1 {
			t.Fatalf("dead-letter %d: %v, %v", id, moved, err)
		}
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: moved[0].DLQMsgID})
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(m.Headers, &got); err != nil {
			t.Fatalf("headers shown for %s: %s (%v)", sent, m.Headers, err)
		}
		_ = json.Unmarshal([]byte(sent), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("headers shown for a dead message sent with %s: %s", sent, m.Headers)
		}
	}
}
