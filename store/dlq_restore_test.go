package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A discarded message comes back into its DLQ whole: its id, payload,
// headers with the dead-letter block, and failure history, with the
// DLQ's counts following it; once back, or once purged, it is refused
// with why.
func TestRestoreDiscardedDead(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	before, err := s.ShowDead(ctx, dlq, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.DiscardDead(ctx, q, ids); err != nil || n != 3 {
		t.Fatalf("discard = %d, %v", n, err)
	}
	wantCounted(t, s, dlq, 0)
	timeouts := store.DiscardedFilter{ErrorClass: "Timeout"}
	page, err := s.ListDiscarded(ctx, q, timeouts, "", 2)
	if items := page.Items; err != nil || page.NextCursor == "" || len(items) != 2 || items[0].Kind != "k" || items[0].ArchivedAt.IsZero() || items[0].RetryOriginal {
		t.Fatalf("list discarded = %+v, %v; want 2 of kind k and a next cursor", page, err)
	}
	// The three were discarded in one statement, at one archived_at: the
	// next page goes on by id.
	rest, err := s.ListDiscarded(ctx, q, timeouts, page.NextCursor, 2)
	if err != nil || rest.NextCursor != "" || len(rest.Items) != 1 || rest.Items[0].MsgID == page.Items[0].MsgID || rest.Items[0].MsgID == page.Items[1].MsgID {
		t.Fatalf("next page = %+v, %v; want the third message and no further cursor", rest, err)
	}
	if _, err := s.ListDiscarded(ctx, q, store.DiscardedFilter{}, page.NextCursor, 2); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a cursor passed with other filters: %v, want it refused", err)
	}
	if _, err := s.ListDiscarded(ctx, q, timeouts, pgtest.TamperCursor(t, page.NextCursor), 2); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a tampered cursor: %v, want it refused", err)
	}
	if page, _ := s.ListDiscarded(ctx, q, store.DiscardedFilter{Kind: "other"}, "", 10); len(page.Items) != 0 {
		t.Fatalf("list discarded of another kind = %+v, want none", page.Items)
	}

	dry, err := s.RestoreDead(ctx, q, ids[:1], true)
	if err != nil || !slices.Equal(dry.Restored, ids[:1]) {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	wantCounted(t, s, dlq, 0)
	// Purge one, then restore all three and an id never used.
	mustExec(t, s, `DELETE FROM pgmq."a_`+dlq+`" WHERE msg_id = $1`, ids[2])
	rep, err := s.RestoreDead(ctx, dlq, []int64{ids[0], ids[1], ids[2], 999_999}, false)
	if err != nil || !slices.Equal(rep.Restored, ids[:2]) {
		t.Fatalf("restore = %+v, %v; want %v restored", rep, err, ids[:2])
	}
	wantRefused(t, rep, ids[2], store.RestoreNotArchived)
	wantRefused(t, rep, 999_999, store.RestoreNotArchived)
	wantCounted(t, s, dlq, 2)
	after, err := s.ShowDead(ctx, dlq, ids[0])
	if err != nil {
		t.Fatalf("the restored message is not in its DLQ: %v", err)
	}
	if string(after.Payload) != string(before.Payload) || !jsonEqual(after.Headers, before.Headers) ||
		after.Block == nil || after.Block.ErrorClass != "Timeout" || len(after.History) != len(before.History) || len(after.History) == 0 {
		t.Fatalf("restored message differs:\n got %+v\nwant %+v", after, before)
	}

	again, err := s.RestoreDead(ctx, q, ids[:1], false)
	if err != nil || len(again.Restored) != 0 {
		t.Fatalf("restore again = %+v, %v", again, err)
	}
	wantRefused(t, again, ids[0], store.RestoreInDLQ)
	wantCounted(t, s, dlq, 2)
	// Restored, it can be retried as any dead message.
	if r, err := s.RetryDead(ctx, dlq, ids[:1], store.RetryOptions{}); err != nil || r.Retried != 1 {
		t.Fatalf("retry of a restored message = %+v, %v", r, err)
	}
}

// The original of a retry with a corrected payload stays in the archive,
// listed as such and refused, whether the retry marked it or, made
// before that mark, only the corrected message's note names it.
func TestRestoreRefusesRetryOriginal(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	var corrected []int64
	for _, id := range ids {
		r, err := s.RetryDead(ctx, dlq, []int64{id}, store.RetryOptions{Payload: json.RawMessage(`{"fixed":true}`)})
		if err != nil || r.Retried != 1 {
			t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
		}
		corrected = append(corrected, r.Moved[0].MsgID)
	}
	// The first corrected message ran and its history went with it: only
	// the mark names the original.
	mustExec(t, s, `DELETE FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, q, corrected[0])
	// As a retry made before the mark left it: only the note names it.
	mustExec(t, s, `DELETE FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2 AND error_class = $3`, dlq, ids[1], store.PayloadReplacedClass)
	listed, err := s.ListDiscarded(ctx, q, store.DiscardedFilter{}, "", 10)
	items := listed.Items
	if err != nil || len(items) != 2 || !items[0].RetryOriginal || !items[1].RetryOriginal {
		t.Fatalf("list = %+v, %v; want both marked as retry originals", items, err)
	}
	rep, err := s.RestoreDead(ctx, q, ids, false)
	if err != nil || len(rep.Restored) != 0 {
		t.Fatalf("restore of retry originals = %+v, %v", rep, err)
	}
	wantRefused(t, rep, ids[0], store.RestoreRetryOriginal)
	wantRefused(t, rep, ids[1], store.RestoreRetryOriginal)
	wantCounted(t, s, dlq, 0)
}

// For an archived message with no failure history under its DLQ, dlq
// discarded and dlq restore look up the note of a retry with a corrected
// payload by its beginning in the index of such notes
// (failures_payload_replaced_idx), where they read the whole failure
// history, millions of rows perhaps, once per message. Sequential scans
// are turned off so that the plan does not depend on the table's size:
// with no index to serve, PostgreSQL still reads the whole table. The
// index also takes a note longer than an index entry holds: it keeps each
// note's beginning only.
func TestRetryOriginalNoteIsFoundByIndex(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: its indexes as this pgbus's migrations leave them
	dlq := store.DLQName(newQueue(t, s))
	mustExec(t, s, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		SELECT $1::text, 1, 0, $2::text, string_agg(md5(g::text), '') FROM generate_series(1, 2048) AS g`, dlq, store.PayloadReplacedClass)
	list, listArgs := store.ListDiscardedSQL(dlq, store.DiscardedFilter{}, 10)
	restore, restoreArgs := store.RestoreSortSQL(dlq, []int64{1, 2})
	for _, q := range []struct {
		what string
		sql  string
		args []any
	}{{"dlq discarded", list, listArgs}, {"dlq restore", restore, restoreArgs}} {
		scans := planScans(t, s, q.sql, q.args...)
		if slices.Contains(scans, "Seq Scan on failures") || !noteByIndex(scans) {
			t.Errorf("%s is planned with the scans %q; want the note looked up in failures_payload_replaced_idx by its beginning, and no Seq Scan on failures", q.what, scans)
		}
	}
}

// planScans explains sql with sequential scans turned off and returns the
// scans of its plan, each as "Node Type on relation using index where
// condition" (a bitmap index scan names no relation).
func planScans(t *testing.T, s *store.Store, sql string, args ...any) []string {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var plan []struct{ Plan planNode }
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&plan); err != nil || len(plan) != 1 {
		t.Fatalf("explain: %d plans, %v", len(plan), err)
	}
	var scans []string
	var walk func(planNode)
	walk = func(n planNode) {
		if n.Relation != "" || n.Index != "" {
			scan := n.Type
			if n.Relation != "" {
				scan += " on " + n.Relation
			}
			if n.Index != "" {
				scan += " using " + n.Index
			}
			if n.Cond != "" {
				scan += " where " + n.Cond
			}
			scans = append(scans, scan)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plan[0].Plan)
	return scans
}

// noteByIndex reports whether scans (of planScans) look a note of a retry
// with a corrected payload up by its beginning in the index of the notes.
func noteByIndex(scans []string) bool {
	return slices.ContainsFunc(scans, func(scan string) bool {
		return strings.Contains(scan, " using failures_payload_replaced_idx where ")
	})
}

// planNode is a node of a plan EXPLAIN (FORMAT JSON) gives.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Cond     string     `json:"Index Cond"`
	Plans    []planNode `json:"Plans"`
}

// Bad input is refused before anything is read: an unknown queue, no
// ids, too many, ids not positive.
func TestRestoreDeadRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	_, err := s.RestoreDead(ctx, uniqueName("nosuch"), []int64{1}, false)
	wantErr(t, "unknown queue", err, store.ErrNotFound, "has no dead-letter queue")
	_, err = s.RestoreDead(ctx, q, nil, false)
	wantErr(t, "no ids", err, store.ErrInvalid, "pass 1 to")
	_, err = s.RestoreDead(ctx, q, []int64{0}, false)
	wantErr(t, "id 0", err, store.ErrInvalid, "ids are positive")
	_, err = s.RestoreDead(ctx, q, make([]int64, store.MaxBatch+1), false)
	wantErr(t, "too many", err, store.ErrInvalid, "pass 1 to")
	_, err = s.ListDiscarded(ctx, q, store.DiscardedFilter{}, "", 0)
	wantErr(t, "limit 0", err, store.ErrInvalid, "limit 0")
}

// A role that may only read lists the archive but cannot restore, and
// nothing moves.
func TestRestoreDeadReadOnlyRole(t *testing.T) {
	t.Parallel()
	url, owner, q, ids := databaseWithDead(t, 2)
	if n, err := owner.DiscardDead(testContext(t), q, ids); err != nil || n != 2 {
		t.Fatalf("discard = %d, %v", n, err)
	}
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	reader := openStore(t, roleURL)
	if page, err := reader.ListDiscarded(testContext(t), q, store.DiscardedFilter{}, "", 10); err != nil || len(page.Items) != 2 {
		t.Fatalf("list as the reader = %+v, %v", page.Items, err)
	}
	_, err := reader.RestoreDead(testContext(t), q, ids, false)
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("restore as the reader = %v, want permission denied", err)
	}
	if page, _ := owner.ListDiscarded(testContext(t), q, store.DiscardedFilter{}, "", 10); len(page.Items) != 2 {
		t.Fatalf("the archive holds %d after a refused restore, want 2", len(page.Items))
	}
}

func wantCounted(t *testing.T, s *store.Store, dlq string, want int64) {
	t.Helper()
	rows, counted, err := deadRowsAndCount(testContext(t), s, dlq)
	if err != nil || rows != want || counted != want {
		t.Fatalf("%s holds %d rows and counts %d (%v), want %d", dlq, rows, counted, err, want)
	}
}

func wantRefused(t *testing.T, rep store.RestoreReport, id int64, why string) {
	t.Helper()
	for _, r := range rep.Refused {
		if r.MsgID == id {
			if r.Why != why {
				t.Errorf("id %d refused as %q, want %q", id, r.Why, why)
			}
			return
		}
	}
	t.Errorf("id %d not refused in %+v, want %q", id, rep, why)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func mustExec(t *testing.T, s *store.Store, sql string, args ...any) {
	t.Helper()
	if _, err := s.Pool().Exec(testContext(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// On a failure history too large to block its writes while migration 19
// builds its index, the index is built beforehand with the migration's
// statement and CONCURRENTLY, as the README says: the migration then
// applies, building nothing more, and the note is looked up in that index.
func TestMigrationKeepsTheRetryNoteIndexBuiltBeforehand(t *testing.T) {
	t.Parallel()
	url, all := databaseAtVersion(t, 18)
	_, stmt, ok := strings.Cut(all[18].SQL, "\nCREATE INDEX ")
	if !ok || !strings.Contains(stmt, "failures_payload_replaced_idx") {
		t.Fatalf("migration 19 (%s) no longer creates failures_payload_replaced_idx", all[18].Name)
	}
	if _, err := connect(t, url, "").Exec(testContext(t), "CREATE INDEX CONCURRENTLY "+stmt); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, url)
	if st, err := s.Migrate(testContext(t)); err != nil || st.Applied != len(all)-18 {
		t.Fatalf("migrate = %+v, %v; want %d applied", st, err, len(all)-18)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pg_index WHERE indrelid = 'pgbus.failures'::regclass AND indisvalid`); n != 3 {
		t.Fatalf("pgbus.failures has %d valid indexes, want 3: its key, failures_message_idx and failures_payload_replaced_idx", n)
	}
	list, args := store.ListDiscardedSQL(store.DLQName(newQueue(t, s)), store.DiscardedFilter{}, 10)
	if scans := planScans(t, s, list, args...); !noteByIndex(scans) {
		t.Fatalf("dlq discarded is planned with the scans %q; want the note looked up in failures_payload_replaced_idx", scans)
	}
}

// discardedOne discards one dead message of a new queue whose block's
// dead_lettered_at is set to at (a JSON value), and returns the queue and
// the message's id.
func discardedOne(t *testing.T, s *store.Store, at string) (string, int64) {
	t.Helper()
	q := newQueue(t, s)
	ids := deadN(t, s, q, 1, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	if n, err := s.DiscardDead(testContext(t), q, ids); err != nil || n != 1 {
		t.Fatalf("discard = %d, %v", n, err)
	}
	mustExec(t, s, `UPDATE pgmq."a_`+store.DLQName(q)+`" SET headers = jsonb_set(headers, '{`+store.HeaderDeadLetter+`,dead_lettered_at}', $1::jsonb) WHERE msg_id = $2`, at, ids[0])
	return q, ids[0]
}

// A discarded message's dead_lettered_at reads the same in every session,
// whatever its TimeZone, as dlq show reads it: a time with an offset as
// that instant in UTC, one without an offset as no time.
func TestDiscardedDeadTimeReadsTheSameInEveryTimeZone(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	bare, bareID := discardedOne(t, s, `"2026-02-05T20:00:00"`)
	offset, _ := discardedOne(t, s, `"2026-02-05T20:00:00+05:30"`)
	for _, zone := range []string{"UTC", "Asia/Kolkata", "America/Los_Angeles"} {
		zs, err := store.Open(ctx, pgtest.WithParam(t, pgtest.URL(t), "TimeZone", zone))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(zs.Close)
		page, err := zs.ListDiscarded(ctx, bare, store.DiscardedFilter{}, "", 10)
		if err != nil || len(page.Items) != 1 || page.Items[0].MsgID != bareID {
			t.Fatalf("TimeZone %s: list discarded of %s = %+v, %v; want message %d", zone, bare, page.Items, err, bareID)
		}
		if at := page.Items[0].DeadLetteredAt; !at.IsZero() {
			t.Errorf("TimeZone %s: a dead_lettered_at without an offset read as %s; want no time, as dlq show reads it", zone, at)
		}
		page, err = zs.ListDiscarded(ctx, offset, store.DiscardedFilter{}, "", 10)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("TimeZone %s: list discarded of %s = %+v, %v; want one message", zone, offset, page.Items, err)
		}
		want := time.Date(2026, 2, 5, 14, 30, 0, 0, time.UTC)
		if at := page.Items[0].DeadLetteredAt; !at.Equal(want) || at.Location() != time.UTC {
			t.Errorf("TimeZone %s: a dead_lettered_at of 20:00+05:30 read as %s; want %s", zone, at, want)
		}
	}
}

// One discarded message whose dead_lettered_at is no date breaks only its
// own time, read as none, not the list of the others.
func TestDiscardedListWithAnUnreadableDeadTime(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q, id := discardedOne(t, s, `"2026-02-30T00:00:00Z"`)
	page, err := s.ListDiscarded(ctx, q, store.DiscardedFilter{}, "", 10)
	if err != nil || len(page.Items) != 1 || page.Items[0].MsgID != id {
		t.Fatalf("list discarded of %s = %+v, %v; want message %d", q, page.Items, err, id)
	}
	if it := page.Items[0]; !it.DeadLetteredAt.IsZero() || it.ErrorClass != "Timeout" || it.ArchivedAt.IsZero() {
		t.Errorf("listed %+v; want no dead time, and its error class and archive time", it)
	}
}

// A message retried with a corrected payload that dies again carries the
// note of its correction into the DLQ under its new id; discarded, it is
// no original of a retry but the corrected message itself, and is
// restored. Its original stays refused.
func TestRestoreCorrectedMessageDeadAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	original := deadN(t, s, q, 1, "k", "BadInput", store.ReasonNonRetryable)[0]
	r, err := s.RetryDead(ctx, dlq, []int64{original}, store.RetryOptions{Payload: json.RawMessage(`{"fixed":true}`)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
	}
	corrected := deadIDs(t, s, q, dlq, []int64{r.Moved[0].MsgID}, "Timeout", store.ReasonMaxRetriesExceeded)[0]
	if n, err := s.DiscardDead(ctx, dlq, []int64{corrected}); err != nil || n != 1 {
		t.Fatalf("discard = %d, %v", n, err)
	}
	listed, err := s.ListDiscarded(ctx, dlq, store.DiscardedFilter{}, "", 10)
	if err != nil || len(listed.Items) != 2 {
		t.Fatalf("list = %+v, %v; want the original and the corrected message", listed.Items, err)
	}
	for _, it := range listed.Items {
		if want := it.MsgID == original; it.RetryOriginal != want {
			t.Errorf("message %d listed with RetryOriginal %v, want %v (original %d, corrected %d)", it.MsgID, it.RetryOriginal, want, original, corrected)
		}
	}
	rep, err := s.RestoreDead(ctx, dlq, []int64{original, corrected}, false)
	if err != nil || !slices.Equal(rep.Restored, []int64{corrected}) {
		t.Fatalf("restore = %+v, %v; want %d restored", rep, err, corrected)
	}
	wantRefused(t, rep, original, store.RestoreRetryOriginal)
	wantCounted(t, s, dlq, 1)
}
