package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// collidingDLQs makes queues qa and qb whose DLQs both hold id x (qa also
// holds x+1) and qc whose DLQ holds y; payloads say where each came from.
type collision struct {
	qa, qb, qc string
	x, y       int64
}

func collidingDLQs(t *testing.T, s *store.Store) collision {
	t.Helper()
	x := pgtest.DLQStart()
	c := collision{qa: newQueueAt(t, s, x, nil), qb: newQueueAt(t, s, x, nil), qc: newQueue(t, s, nil), x: x}
	a := pgtest.DeadLetter(t, s, c.qa, pgtest.DeadSpec{Kind: "k", Payload: `{"from": "a", "n": 0}`}, pgtest.DeadSpec{Kind: "k", Payload: `{"from": "a", "n": 1}`})
	b := pgtest.DeadLetter(t, s, c.qb, pgtest.DeadSpec{Kind: "k", Payload: `{"from": "b", "n": 0}`})
	cc := pgtest.DeadLetter(t, s, c.qc, pgtest.DeadSpec{Kind: "k", Payload: `{"from": "c", "n": 0}`})
	if a[0] != x || a[1] != x+1 || b[0] != x {
		t.Fatalf("DLQ ids %v and %v; want both to start at %d", a, b, x)
	}
	c.y = cc[0]
	return c
}

// An id in no DLQ is not_found and an id in two DLQs is ambiguous, naming
// both, and stays where it is; the other ids are retried, each back in its
// source queue without its dead-letter block.
func TestRetryByIDsOutcomes(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	c := collidingDLQs(t, s)
	missing := pgtest.MissingDLQID()

	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{c.x + 1, missing, c.x, c.y, c.y}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Retried != 2 || r.NotFound != 1 || r.Ambiguous != 1 || r.Failed != 0 || r.OK() || r.FirstError == "" || r.DryRun {
		t.Fatalf("retry = %+v; want 2 retried, 1 not found, 1 ambiguous", r)
	}
	want := []struct {
		id      int64
		outcome string
		dlq     string
	}{{c.x + 1, ops.OutcomeRetried, c.qa + "_dlq"}, {missing, ops.OutcomeNotFound, ""}, {c.x, ops.OutcomeAmbiguous, ""}, {c.y, ops.OutcomeRetried, c.qc + "_dlq"}}
	if len(r.Outcomes) != len(want) {
		t.Fatalf("outcomes %+v; want one per distinct id, in the order given", r.Outcomes)
	}
	for i, w := range want {
		o := r.Outcomes[i]
		if o.ID != w.id || o.Outcome != w.outcome || o.DLQ != w.dlq {
			t.Errorf("outcome %d = %+v; want id %d %s in %q", i, o, w.id, w.outcome, w.dlq)
		}
	}
	amb := r.Outcomes[2]
	if !slices.Equal(amb.DLQs, sorted(c.qa+"_dlq", c.qb+"_dlq")) || !strings.Contains(amb.Error, c.qa+"_dlq") || !strings.Contains(amb.Error, c.qb+"_dlq") {
		t.Fatalf("ambiguous outcome = %+v; want both DLQs listed", amb)
	}
	if r.Outcomes[1].Error == "" || r.Outcomes[1].NewMsgID != 0 {
		t.Fatalf("not-found outcome = %+v", r.Outcomes[1])
	}
	for _, d := range amb.DLQs {
		if !hasHint(r.Next, ops.OpDLQRetry, map[string]any{"queue": d, "ids": []int64{c.x}}) {
			t.Errorf("next steps %+v lack the retry of %d in %s", r.Next, c.x, d)
		}
	}
	// Nothing of the ambiguous id moved; the others are back in their
	// queues, payload intact, block gone, trip counted.
	if !inDLQ(t, s, c.qa, c.x) || !inDLQ(t, s, c.qb, c.x) || inDLQ(t, s, c.qa, c.x+1) || inDLQ(t, s, c.qc, c.y) {
		t.Fatal("the DLQs do not hold what the outcomes say")
	}
	if pgtest.Live(t, s, c.qb) != 0 || pgtest.Live(t, s, c.qa) != 1 || pgtest.Live(t, s, c.qc) != 1 {
		t.Fatalf("source queues hold a=%d b=%d c=%d; want 1, 0, 1", pgtest.Live(t, s, c.qa), pgtest.Live(t, s, c.qb), pgtest.Live(t, s, c.qc))
	}
	checkRetriedRow(t, s, c.qa, r.Outcomes[0], `{"from": "a", "n": 1}`)
	checkRetriedRow(t, s, c.qc, r.Outcomes[3], `{"from": "c", "n": 0}`)

	// With the queue given, the ambiguous id is retried from that DLQ only.
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{c.x}, Filter: ops.DeadFilter{Queue: c.qb}})
	if err != nil || r.Retried != 1 || !r.OK() || len(r.Outcomes) != 1 || r.Outcomes[0].Outcome != ops.OutcomeRetried || r.Outcomes[0].DLQ != c.qb+"_dlq" {
		t.Fatalf("retry of %d in %s = %+v, %v", c.x, c.qb, r, err)
	}
	checkRetriedRow(t, s, c.qb, r.Outcomes[0], `{"from": "b", "n": 0}`)
	if !inDLQ(t, s, c.qa, c.x) || inDLQ(t, s, c.qb, c.x) {
		t.Fatal("the retry with a queue moved the wrong message")
	}
	// Given the DLQ's name, the id in the other DLQ is not found there.
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{c.x + 1}, Filter: ops.DeadFilter{Queue: c.qb + "_dlq"}})
	if err != nil || r.NotFound != 1 || r.Outcomes[0].Outcome != ops.OutcomeNotFound || !strings.Contains(r.Outcomes[0].Error, c.qb) {
		t.Fatalf("retry of %d in %s = %+v, %v", c.x+1, c.qb, r, err)
	}
}

// checkRetriedRow checks the row a retry outcome says it made: in queue,
// with the payload, without the dead-letter block, one trip counted.
func checkRetriedRow(t *testing.T, s *store.Store, queue string, o ops.IDOutcome, payload string) {
	t.Helper()
	if o.Queue != queue || o.NewMsgID == 0 {
		t.Fatalf("outcome %+v; want a new id in %s", o, queue)
	}
	n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+queue+`" WHERE msg_id = $1 AND message = $2::jsonb
		AND NOT headers ? 'pgbus_dead_letter' AND headers->>'pgbus_dlq_retries' = '1' AND headers->>'pgbus_kind' = 'k'`, o.NewMsgID, payload)
	if n != 1 {
		var row string
		_ = s.Pool().QueryRow(testContext(t), `SELECT coalesce((SELECT row_to_json(q)::text FROM pgmq."q_`+queue+`" q WHERE msg_id = $1), 'none')`, o.NewMsgID).Scan(&row)
		t.Fatalf("retried message %d in %s: row %s; want payload %s, no dead-letter block, one trip", o.NewMsgID, queue, row, payload)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// A dry run reports would_retry for what would move and moves nothing.
func TestRetryByIDsDryRun(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	c := collidingDLQs(t, s)
	missing := pgtest.MissingDLQID()
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{c.x + 1, c.x, missing}, DryRun: true})
	if err != nil || !r.DryRun || r.Retried != 1 || r.Ambiguous != 1 || r.NotFound != 1 {
		t.Fatalf("dry run = %+v, %v", r, err)
	}
	o := r.Outcomes[0]
	if o.Outcome != ops.OutcomeWouldRetry || o.DLQ != c.qa+"_dlq" || o.Queue != c.qa || o.NewMsgID != 0 {
		t.Fatalf("dry-run outcome = %+v; want would_retry to %s without a new id", o, c.qa)
	}
	if r.Outcomes[1].Outcome != ops.OutcomeAmbiguous || r.Outcomes[2].Outcome != ops.OutcomeNotFound {
		t.Fatalf("dry-run outcomes = %+v", r.Outcomes)
	}
	// The real retry of the id that would move; the ambiguous one has
	// its own steps, one per DLQ, and the missing one none.
	if !hasHint(r.Next, ops.OpDLQRetry, map[string]any{"ids": []int64{c.x + 1}}) {
		t.Fatalf("dry run's next steps %+v lack the real retry", r.Next)
	}
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{c.x}, Filter: ops.DeadFilter{Queue: c.qa}, DryRun: true})
	if err != nil || r.Retried != 1 || r.Outcomes[0].Outcome != ops.OutcomeWouldRetry || r.Outcomes[0].DLQ != c.qa+"_dlq" {
		t.Fatalf("dry run with queue = %+v, %v", r, err)
	}
	if !inDLQ(t, s, c.qa, c.x) || !inDLQ(t, s, c.qa, c.x+1) || !inDLQ(t, s, c.qb, c.x) || pgtest.Live(t, s, c.qa) != 0 || pgtest.Live(t, s, c.qb) != 0 {
		t.Fatal("a dry run moved messages")
	}
}

// Discard by ids has the same outcomes: not_found, ambiguous (nothing
// moves), and discarded into the DLQ's archive.
func TestDiscardByIDsOutcomes(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	c := collidingDLQs(t, s)
	missing := pgtest.MissingDLQID()
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{c.x, c.x + 1, missing, c.y}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Discarded != 2 || d.NotFound != 1 || d.Ambiguous != 1 || d.Failed != 0 || d.OK() || d.FirstError == "" {
		t.Fatalf("discard = %+v; want 2 discarded, 1 not found, 1 ambiguous", d)
	}
	want := []struct {
		id      int64
		outcome string
		dlq     string
	}{{c.x, ops.OutcomeAmbiguous, ""}, {c.x + 1, ops.OutcomeDiscarded, c.qa + "_dlq"}, {missing, ops.OutcomeNotFound, ""}, {c.y, ops.OutcomeDiscarded, c.qc + "_dlq"}}
	for i, w := range want {
		if o := d.Outcomes[i]; o.ID != w.id || o.Outcome != w.outcome || o.DLQ != w.dlq {
			t.Errorf("outcome %d = %+v; want id %d %s in %q", i, o, w.id, w.outcome, w.dlq)
		}
	}
	if !slices.Equal(d.Outcomes[0].DLQs, sorted(c.qa+"_dlq", c.qb+"_dlq")) {
		t.Fatalf("ambiguous outcome = %+v; want both DLQs", d.Outcomes[0])
	}
	for _, dlq := range d.Outcomes[0].DLQs {
		if !hasHint(d.Next, ops.OpDLQDiscard, map[string]any{"queue": dlq, "ids": []int64{c.x}}) {
			t.Errorf("next steps %+v lack the discard of %d in %s", d.Next, c.x, dlq)
		}
	}
	if !inDLQ(t, s, c.qa, c.x) || !inDLQ(t, s, c.qb, c.x) || inDLQ(t, s, c.qa, c.x+1) || inDLQ(t, s, c.qc, c.y) {
		t.Fatal("the DLQs do not hold what the outcomes say")
	}
	if pgtest.Archived(t, s, c.qa+"_dlq") != 1 || pgtest.Archived(t, s, c.qb+"_dlq") != 0 || pgtest.Archived(t, s, c.qc+"_dlq") != 1 || pgtest.Live(t, s, c.qa)+pgtest.Live(t, s, c.qc) != 0 {
		t.Fatal("discarded messages are not in their DLQ's archive (or went back to their queue)")
	}
	d, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{c.x}, Filter: ops.DeadFilter{Queue: c.qa}})
	if err != nil || d.Discarded != 1 || !d.OK() || d.Outcomes[0].DLQ != c.qa+"_dlq" || inDLQ(t, s, c.qa, c.x) || !inDLQ(t, s, c.qb, c.x) {
		t.Fatalf("discard of %d in %s = %+v, %v", c.x, c.qa, d, err)
	}
}

// A DLQ that cannot be written fails its ids with outcome failed, naming
// the DLQ, while the ids of other DLQs are handled.
func TestByIDsFailureNamesTheDLQ(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	broken, fine := newQueue(t, s, nil), newQueue(t, s, nil)
	b := pgtest.DeadLetterN(t, s, broken, 1, pgtest.DeadSpec{})
	f := pgtest.DeadLetterN(t, s, fine, 2, pgtest.DeadSpec{})
	// Discard moves messages to the DLQ's archive: without it, it fails.
	if _, err := s.Pool().Exec(ctx, `DROP TABLE pgmq."a_`+broken+`_dlq"`); err != nil {
		t.Fatal(err)
	}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{b[0], f[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Failed != 1 || d.Discarded != 1 || d.OK() || d.FirstError == "" {
		t.Fatalf("discard = %+v; want 1 failed, 1 discarded", d)
	}
	if o := d.Outcomes[0]; o.Outcome != ops.OutcomeFailed || o.DLQ != broken+"_dlq" || o.Error == "" {
		t.Fatalf("failed outcome = %+v; want failed in %s with an error", o, broken+"_dlq")
	}
	if !inDLQ(t, s, broken, b[0]) || inDLQ(t, s, fine, f[0]) {
		t.Fatal("the failed message left its DLQ, or the other was not discarded")
	}
	// A retry with a corrected payload keeps the original in the archive:
	// without it, that retry fails and the message stays. When nothing at
	// all could move because the database refused, that is the call's
	// error, with the database's own error inside.
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{b[0]}, Payload: json.RawMessage(`{"fixed": true}`)})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" || r.Retried != 0 {
		t.Fatalf("retry into a broken DLQ = %+v, %v; want the database's undefined-table error", r, err)
	}
	if !inDLQ(t, s, broken, b[0]) || pgtest.Live(t, s, broken) != 0 {
		t.Fatal("a failed retry moved the message")
	}
}

// Every id of a call is located at once: 100 ids over 3 DLQs, shuffled,
// each get their own DLQ's outcome.
func TestByIDsLocateAcrossDLQs(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, op := range []string{"retry", "discard"} {
		t.Run(op, func(t *testing.T) {
			queues := []string{newQueue(t, s, nil), newQueue(t, s, nil), newQueue(t, s, nil)}
			where := map[int64]string{}
			var ids []int64
			for i, q := range queues {
				for _, id := range pgtest.DeadLetterN(t, s, q, []int{34, 33, 33}[i], pgtest.DeadSpec{Kind: "k"}) {
					where[id] = q
					ids = append(ids, id)
				}
			}
			rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			var outcomes []ops.IDOutcome
			if op == "retry" {
				r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids})
				// Moved lists as many as fit one response; the rest are counted.
				if err != nil || r.Retried != 100 || !r.OK() || len(r.Moved) == 0 || len(r.Moved)+r.MovedOmitted != 100 {
					t.Fatalf("retry of 100 ids = %d retried, %d moved, %v; first error %q", r.Retried, len(r.Moved), err, r.FirstError)
				}
				outcomes = r.Outcomes
			} else {
				d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids})
				if err != nil || d.Discarded != 100 || !d.OK() {
					t.Fatalf("discard of 100 ids = %+v, %v", d, err)
				}
				outcomes = d.Outcomes
			}
			if len(outcomes) != 100 {
				t.Fatalf("%d outcomes, want 100", len(outcomes))
			}
			for i, o := range outcomes {
				q := where[o.ID]
				if o.ID != ids[i] || o.DLQ != q+"_dlq" || (op == "retry" && (o.Outcome != ops.OutcomeRetried || o.Queue != q || o.NewMsgID == 0)) ||
					(op == "discard" && o.Outcome != ops.OutcomeDiscarded) {
					t.Fatalf("outcome %d = %+v; want id %d from %s", i, o, ids[i], q+"_dlq")
				}
			}
			for i, q := range queues {
				n := []int{34, 33, 33}[i]
				if pgtest.Live(t, s, q+"_dlq") != 0 {
					t.Fatalf("%s still holds messages", q+"_dlq")
				}
				if op == "retry" && pgtest.Live(t, s, q) != n {
					t.Fatalf("%s holds %d, want %d", q, pgtest.Live(t, s, q), n)
				}
				if op == "discard" && pgtest.Archived(t, s, q+"_dlq") != n {
					t.Fatalf("the archive of %s holds %d, want %d", q+"_dlq", pgtest.Archived(t, s, q+"_dlq"), n)
				}
			}
		})
	}
	tooMany := make([]int64, ops.MaxIDs+1)
	for i := range tooMany {
		tooMany[i] = int64(i + 1)
	}
	if _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: tooMany}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(ops.MaxIDs)) {
		t.Fatalf("retry of %d ids = %v, want ErrInvalid naming the limit", len(tooMany), err)
	}
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: tooMany}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("discard of %d ids = %v, want ErrInvalid", len(tooMany), err)
	}
}

// A corrected payload replaces the payload of the one message retried;
// the original stays in the DLQ's archive and the audit log keeps only the
// corrected payload's size.
func TestRetryWithCorrectedPayload(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	client := uniqueName("fixer")
	ctx := ops.WithClient(testContext(t), client)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Payload: `{"amount": "ten"}`})
	fixed := json.RawMessage(`{"amount": 10, "marker": "corrected-7c1"}`)

	for label, req := range map[string]ops.DLQRetryRequest{
		"two ids":      {IDs: ids, Payload: fixed},
		"a filter":     {Filter: ops.DeadFilter{Queue: q}, Payload: fixed},
		"invalid JSON": {IDs: ids[:1], Payload: json.RawMessage(`{"amount":`)},
		"too large":    {IDs: ids[:1], Payload: json.RawMessage(`"` + strings.Repeat("x", ops.MaxCorrectedPayloadBytes) + `"`)},
	} {
		if _, err := svc.DLQRetry(ctx, req); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("corrected payload with %s = %v, want ErrInvalid", label, err)
		}
	}
	if pgtest.Live(t, s, q+"_dlq") != 2 || len(auditRows(t, s, client)) != 0 {
		t.Fatal("rejected retries moved messages or were audited")
	}

	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}, Payload: fixed})
	if err != nil || r.Retried != 1 || !r.OK() {
		t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
	}
	newID := r.Outcomes[0].NewMsgID
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND message = $2::jsonb AND NOT headers ? 'pgbus_dead_letter'`, newID, string(fixed)); n != 1 {
		t.Fatalf("the retried message does not carry the corrected payload")
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`_dlq" WHERE msg_id = $1 AND message = '{"amount": "ten"}'::jsonb`, ids[0]); n != 1 {
		t.Fatal("the original is not kept in the DLQ's archive")
	}
	if !inDLQ(t, s, q, ids[1]) {
		t.Fatal("the other dead message moved")
	}
	rows := auditRows(t, s, client)
	if len(rows) != 1 || rows[0].Tool != ops.OpDLQRetry || rows[0].IsError {
		t.Fatalf("audit rows = %+v; want one dlq_retry", rows)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(rows[0].Arguments), &args); err != nil {
		t.Fatal(err)
	}
	if args["payload_bytes"] != float64(len(fixed)) || args["payload"] != nil || strings.Contains(rows[0].Arguments, "corrected-7c1") ||
		strings.Contains(rows[0].Result, "corrected-7c1") {
		t.Fatalf("audit arguments %s result %s; want payload_bytes %d and no payload", rows[0].Arguments, rows[0].Result, len(fixed))
	}
	// The live message shows the new payload and, in its history, the
	// replacement.
	page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: true})
	if err != nil || len(page.Items) != 1 || string(page.Items[0].Payload) != `{"amount":10,"marker":"corrected-7c1"}` {
		t.Fatalf("live messages = %+v, %v", page, err)
	}
	h := page.Items[0].History
	if len(h) != 2 || h[1].ErrorClass != store.PayloadReplacedClass || !strings.Contains(h[1].ErrorMessage, `"ten"`) {
		t.Fatalf("history %+v; want the failure, then the replacement with the original payload", h)
	}
}

// The history of a message that failed on two trips is shown oldest first,
// by when each failure was recorded, and bounded to the newest: the note of
// a corrected payload, the newest, is kept even though its attempt is 0.
func TestHistoryIsOldestFirstAcrossTrips(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"v": 1}`), Headers: json.RawMessage(`{"pgbus_kind": "k"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 4; attempt++ {
		if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: id, Failure: store.Failure{Attempt: attempt, Kind: "k", ErrorClass: "E", ErrorMessage: fmt.Sprintf("trip 1 attempt %d", attempt)}}}); err != nil {
			t.Fatal(err)
		}
	}
	moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 5,
		Failure: &store.Failure{Attempt: 5, Kind: "k", ErrorClass: "E", ErrorMessage: "trip 1 attempt 5"}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter: %v %v", moved, err)
	}
	dead, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: moved[0].DLQMsgID})
	if err != nil || len(dead.History) != 5 || dead.History[0].ErrorMessage != "trip 1 attempt 1" || dead.History[4].ErrorMessage != "trip 1 attempt 5" {
		t.Fatalf("dead history = %+v, %v", dead.History, err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{moved[0].DLQMsgID}, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"v": 2}`)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	newID := r.Outcomes[0].NewMsgID
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: newID, Failure: store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "trip 2 attempt 1"}}}); err != nil {
		t.Fatal(err)
	}
	page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("live messages = %+v, %v", page, err)
	}
	m := page.Items[0]
	var got []string
	for _, f := range m.History {
		got = append(got, f.ErrorClass+": "+strings.SplitN(f.ErrorMessage, ";", 2)[0])
	}
	want := []string{"E: trip 1 attempt 5", store.PayloadReplacedClass + ": payload replaced on retry", "E: trip 2 attempt 1"}
	if m.FailureCount != 7 || !slices.Equal(got, want) {
		t.Fatalf("live history (%d failures) = %q; want the newest %d oldest first: %q", m.FailureCount, got, ops.DefaultBounds.LiveHistory, want)
	}
	for i := 1; i < len(m.History); i++ {
		if m.History[i].FailedAt.Before(m.History[i-1].FailedAt) {
			t.Fatalf("history is not oldest first: %+v", m.History)
		}
	}
}

// An id another call takes between this call's locating it and moving it
// gets outcome already_moved, not failed or not_found: a runbook can tell
// "someone else did it" from a real failure. The other call is a
// transaction that deletes the row and commits only once this call waits
// on the row's lock.
func TestByIDsAlreadyMoved(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"retry", "discard"} {
		t.Run(op, func(t *testing.T) {
			s := testStore(t)
			svc := newService(t, s, ops.Options{})
			q := newQueue(t, s, nil)
			ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k"})
			type result struct {
				outcomes []ops.IDOutcome
				moved    int
			}
			req := ops.DeadFilter{Queue: q}
			r, err := pgtest.TakenMeanwhile(t, s, q+"_dlq", ids[:1], func(ctx context.Context) (result, error) {
				if op == "retry" {
					r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: req})
					return result{r.Outcomes, r.AlreadyMoved}, err
				}
				r, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: req})
				return result{r.Outcomes, r.AlreadyMoved}, err
			})
			if err != nil || len(r.outcomes) != 2 || r.moved != 1 {
				t.Fatalf("%s = %+v, %v; want one id already moved", op, r.outcomes, err)
			}
			if o := r.outcomes[0]; o.ID != ids[0] || o.Outcome != ops.OutcomeAlreadyMoved || o.DLQ != q+"_dlq" || !strings.Contains(o.Error, "another call") {
				t.Fatalf("outcome of the id taken meanwhile = %+v; want already_moved in %s_dlq", o, q)
			}
			if o := r.outcomes[1]; o.Outcome == ops.OutcomeAlreadyMoved || o.Outcome == ops.OutcomeFailed || o.Outcome == ops.OutcomeNotFound {
				t.Fatalf("outcome of the other id = %+v; want it handled", o)
			}
		})
	}
}

// Messages a call by filter selected and another call took meanwhile are
// counted as already moved, not failed, however many there are (past the
// 100 a result lists), and the call goes on to the next ones up to its
// limit.
func TestByFilterAlreadyMoved(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"retry", "discard"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			s := testStore(t)
			svc := newService(t, s, ops.Options{})
			q := newQueue(t, s, nil)
			ids := pgtest.DeadLetterN(t, s, q, 160, pgtest.DeadSpec{Kind: "k"})
			type result struct{ moved, already, failed int }
			req := ops.DeadFilter{Queue: q}
			r, err := pgtest.TakenMeanwhile(t, s, q+"_dlq", ids[:150], func(ctx context.Context) (result, error) {
				if op == "retry" {
					r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: req, Limit: 155})
					return result{r.Retried, r.AlreadyMoved, r.Failed}, err
				}
				r, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: req, Limit: 155, Confirm: true})
				return result{r.Discarded, r.AlreadyMoved, r.Failed}, err
			})
			if err != nil || r != (result{moved: 10, already: 150}) {
				t.Fatalf("%s = %+v, %v; want the 10 left moved past the 150 already moved, none failed", op, r, err)
			}
		})
	}
}

// After a dry run by ids, the real call offered names the ids that would
// move: one in no DLQ would only be reported not found again.
func TestDryRunByIDsOffersTheIDsThatWouldMove(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k"})
	asked := []int64{ids[0], 999_999_999, ids[1]}
	retry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: asked, Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	discard, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: asked, Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for op, next := range map[string][]ops.Hint{ops.OpDLQRetry: retry.Next, ops.OpDLQDiscard: discard.Next} {
		i := slices.IndexFunc(next, func(h ops.Hint) bool { return h.Op == op })
		if i < 0 || !slices.Equal(next[i].Args["ids"].([]int64), ids) || next[i].Args["dry_run"] != nil {
			t.Errorf("%s dry run of %v: next %+v; want the real call of %v", op, asked, next, ids)
		}
	}
}

// A queue's name given with blanks around it, as pasted, names the same
// queue in a call by ids as in a list: show, retry and discard find it.
func TestByIDsTrimTheQueueAsAListDoes(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"})
	padded := " " + q + "\t"
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: padded}})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("list of %q = %d messages, %v; want 2", padded, len(page.Items), err)
	}
	if m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: padded, MsgID: ids[0]}); err != nil || m.MsgID != ids[0] {
		t.Errorf("show of %d in %q = %+v, %v; want the message", ids[0], padded, m, err)
	}
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: padded}, IDs: ids[:1]}); err != nil || r.Retried != 1 {
		t.Errorf("retry of %d in %q = %+v, %v; want it retried", ids[0], padded, r, err)
	}
	if r, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: padded}, IDs: ids[1:]}); err != nil || r.Discarded != 1 {
		t.Errorf("discard of %d in %q = %+v, %v; want it discarded", ids[1], padded, r, err)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("the queue holds %d messages; want the 1 retried", n)
	}
}
