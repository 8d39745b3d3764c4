package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Summaries read pgbus.dlq_group_counts, which triggers on every DLQ keep, unless
// the filter names a time or a text. A filter with Since at the epoch
// selects every message but makes the summary read them (through each
// DLQ's index on the group key, or one by one), so comparing the two
// compares the maintained counts with the messages themselves.

var epoch = time.Unix(0, 0)

func summaryOf(t testing.TB, s *store.Store, f store.DeadFilter) store.DeadSummary {
	t.Helper()
	sum, err := s.SummarizeDeadReport(testContext(t), f)
	if err != nil {
		t.Fatalf("summary %+v: %v", f, err)
	}
	return sum
}

func sameGroups(a, b []store.DeadGroup) bool {
	return slices.EqualFunc(a, b, func(x, y store.DeadGroup) bool {
		return x.DLQ == y.DLQ && x.SourceQueue == y.SourceQueue && x.Kind == y.Kind && x.ErrorClass == y.ErrorClass &&
			x.ErrorPattern == y.ErrorPattern && x.ErrorMessage == y.ErrorMessage &&
			x.Count == y.Count && x.FirstDeadAt.Equal(y.FirstDeadAt) && x.LastDeadAt.Equal(y.LastDeadAt) &&
			slices.Equal(x.Reasons, y.Reasons) && slices.Equal(x.SampleMsgIDs, y.SampleMsgIDs) && x.RetriesFromDLQ == y.RetriesFromDLQ
	})
}

func dumpGroups(gs []store.DeadGroup) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "\n  %s src=%q kind=%.20q class=%q pattern=%.40q msg=%.40q n=%d first=%s last=%s reasons=%v samples=%v trips=%d",
			g.DLQ, g.SourceQueue, g.Kind, g.ErrorClass, g.ErrorPattern, g.ErrorMessage, g.Count, g.FirstDeadAt.Format(time.RFC3339Nano), g.LastDeadAt.Format(time.RFC3339Nano), g.Reasons, g.SampleMsgIDs, g.RetriesFromDLQ)
	}
	return b.String()
}

// checkGroups asserts that dlq is tracked, that its rows in
// pgbus.dlq_group_counts count its messages exactly, under the keys of its
// group index, and that the summaries of f
// (which must select within dlq's queue or by a unique kind) read from them
// equal those read from the messages. It returns the summary.
func checkGroups(t testing.TB, s *store.Store, dlq string, f store.DeadFilter, step string) []store.DeadGroup {
	t.Helper()
	ctx := testContext(t)
	var tracked bool
	if err := s.Pool().QueryRow(ctx, `SELECT pgbus.dlq_groups_tracked(to_regclass($1))`, `pgmq."q_`+dlq+`"`).Scan(&tracked); err != nil || !tracked {
		t.Fatalf("%s: %s tracked = %v, %v", step, dlq, tracked, err)
	}
	if n := dlCount(t, s, `
		SELECT count(*) FROM (
			SELECT k.row_key, count(*) AS n FROM pgmq."q_`+dlq+`" x, pgbus.dlq_group_of(x.headers, x.message) k GROUP BY 1
		) m FULL JOIN (SELECT row_key, count AS n FROM pgbus.dlq_group_counts WHERE dlq = $1) g USING (row_key)
		WHERE m.n IS DISTINCT FROM g.n`, dlq); n != 0 {
		t.Fatalf("%s: %d rows of pgbus.dlq_group_counts differ from the messages of %s", step, n, dlq)
	}
	// pgbus.dlq_group_of spells out the key the DLQ's index is built on.
	if n := dlCount(t, s, `
		SELECT count(*) FROM pgmq."q_`+dlq+`" x, pgbus.dlq_group_of(x.headers, x.message) k
		WHERE k.group_key <> pgbus.dlq_cause_key(x.headers, x.message)
		   OR k.error_norm <> pgbus.dlq_error_norm(x.headers->'pgbus_dead_letter'->>'error_message')`); n != 0 {
		t.Fatalf("%s: %d messages of %s whose group differs from the key of their index", step, n, dlq)
	}
	fast := summaryOf(t, s, f)
	f.Since = epoch
	scan := summaryOf(t, s, f)
	if !sameGroups(fast.Groups, scan.Groups) || fast.TotalGroups != scan.TotalGroups || fast.Truncated != scan.Truncated {
		t.Fatalf("%s: summary from counts (%d groups):%s\nfrom messages (%d groups):%s", step, fast.TotalGroups, dumpGroups(fast.Groups), scan.TotalGroups, dumpGroups(scan.Groups))
	}
	return fast.Groups
}

func dlqDepth(t testing.TB, s *store.Store, queue string) int64 {
	t.Helper()
	st, err := s.QueueStats(testContext(t), queue, store.QueueStatsOptions{Archive: true})
	if err != nil || len(st) != 1 {
		t.Fatalf("stats of %s = %+v, %v", queue, st, err)
	}
	return st[0].DLQDepth
}

func TestDeadGroupsMatchMessages(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it summarizes every DLQ, which other tests drop
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	charge, email := uniqueName("charge"), uniqueName("email")
	byQueue := store.DeadFilter{Queue: q}
	check := func(step string) []store.DeadGroup {
		t.Helper()
		checkGroups(t, s, dlq, store.DeadFilter{Kind: charge}, step+" (kind over every DLQ)")
		checkGroups(t, s, dlq, store.DeadFilter{Queue: q, ErrorClass: "Declined"}, step+" (error class)")
		for _, r := range []string{store.ReasonMaxRetriesExceeded, store.ReasonNonRetryable, store.ReasonDeadlineExceeded, store.ReasonNotRecorded} {
			checkGroups(t, s, dlq, store.DeadFilter{Queue: q, Reason: r}, step+" (reason "+r+")")
		}
		gs := checkGroups(t, s, dlq, byQueue, step)
		want := int64(dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`))
		if got := dlqDepth(t, s, q); got != want {
			t.Fatalf("%s: DLQ depth %d, want %d", step, got, want)
		}
		return gs
	}

	declined := deadN(t, s, q, 7, charge, "Declined", store.ReasonMaxRetriesExceeded)
	timeouts := deadN(t, s, q, 3, charge, "Timeout", store.ReasonMaxRetriesExceeded)
	deadN(t, s, q, 2, charge, "Timeout", store.ReasonNonRetryable)
	deadN(t, s, q, 4, email, "Declined", store.ReasonNonRetryable)
	deadN(t, s, q, 2, email, "", store.ReasonDeadlineExceeded) // no failure: no error class
	ruby := dlSendRaw(t, s, q, `{"job_class":"RubyJob"}`, `{"x-pgmq-group":"g"}`)
	deadIDs(t, s, q, dlq, []int64{ruby}, "E", store.ReasonNonRetryable)
	// Rows other clients may write into a DLQ.
	dlSendRaw(t, s, dlq, `{"plain":1}`, "")
	dlSendRaw(t, s, dlq, `{"plain":2}`, `[1, 2]`)
	dlSendRaw(t, s, dlq, `"scalar"`, `{"pgbus_dead_letter": "not an object", "pgbus_kind": "`+charge+`"}`)
	dlSendRaw(t, s, dlq, `{}`, `{"pgbus_kind": "`+charge+`", "pgbus_dead_letter": {"reason": "", "source_queue": "elsewhere", "error_class": "Declined"}}`)
	dlSendRaw(t, s, dlq, `{}`, `{"pgbus_kind": "`+charge+`", "pgbus_dead_letter": {"reason": "weird", "source_queue": "elsewhere", "error_class": "Declined"}}`)
	gs := check("after inserts")
	if len(gs) != 8 || gs[0].Kind != charge || gs[0].ErrorClass != "Declined" || gs[0].Count != 7 || len(gs[0].SampleMsgIDs) != 5 {
		t.Fatalf("summary after inserts:%s", dumpGroups(gs))
	}
	timeoutGroup := slices.IndexFunc(gs, func(g store.DeadGroup) bool { return g.Kind == charge && g.ErrorClass == "Timeout" })
	if timeoutGroup < 0 || !slices.Equal(gs[timeoutGroup].Reasons, []string{store.ReasonMaxRetriesExceeded, store.ReasonNonRetryable}) {
		t.Fatalf("timeout group:%s", dumpGroups(gs))
	}

	// Retry the newest (a sample), the oldest (the first) and one between.
	if rep, err := s.RetryDead(ctx, q, []int64{declined[6], declined[0], declined[3]}, store.RetryOptions{}); err != nil || rep.Retried != 3 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	gs = check("after retrying three")
	i := slices.IndexFunc(gs, func(g store.DeadGroup) bool {
		return g.Kind == charge && g.SourceQueue == q && g.ErrorClass == "Declined"
	})
	if i < 0 || gs[i].Count != 4 || !slices.Equal(gs[i].SampleMsgIDs, []int64{declined[5], declined[4], declined[2], declined[1]}) {
		t.Fatalf("declined group after the retry:%s", dumpGroups(gs))
	}
	if rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q, ErrorClass: "Timeout"}, 2, store.RetryOptions{}); err != nil || rep.Retried != 2 {
		t.Fatalf("retry matching = %+v, %v", rep, err)
	}
	check("after retrying matching")

	if n, err := s.DiscardDead(ctx, q, []int64{declined[1], timeouts[2]}); err != nil || n != 2 {
		t.Fatalf("discard = %d, %v", n, err)
	}
	check("after discarding")
	if n, err := s.DiscardDeadMatching(ctx, store.DeadFilter{Queue: q, Kind: email, ErrorClass: "Declined"}, 4); err != nil || n != 4 {
		t.Fatalf("discard matching = %d, %v", n, err)
	}
	gs = check("after discarding matching")
	if slices.ContainsFunc(gs, func(g store.DeadGroup) bool { return g.Kind == email && g.ErrorClass == "Declined" }) {
		t.Fatalf("an emptied group is still listed:%s", dumpGroups(gs))
	}
	if n, err := s.PurgeDead(ctx, q, 0); err != nil || n != 6 {
		t.Fatalf("purge = %d, %v", n, err)
	}
	check("after purging")

	// Edit blocks in place: two messages change group, and the times move.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+dlq+`" SET headers = jsonb_set(headers, '{pgbus_dead_letter,error_class}', '"Edited"')
		WHERE msg_id = ANY($1)`, []int64{declined[2], declined[4]}); err != nil {
		t.Fatal(err)
	}
	gs = check("after editing blocks")
	if !slices.ContainsFunc(gs, func(g store.DeadGroup) bool { return g.ErrorClass == "Edited" && g.Count == 2 }) {
		t.Fatalf("no group of the edited messages:%s", dumpGroups(gs))
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+dlq+`" SET enqueued_at = enqueued_at - interval '1 day' WHERE msg_id = $1`, declined[5]); err != nil {
		t.Fatal(err)
	}
	check("after moving a message back in time")
	// What pgmq.read does to a DLQ row changes no group.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+dlq+`" SET vt = now() + interval '1 minute', read_ct = read_ct + 1`); err != nil {
		t.Fatal(err)
	}
	check("after reading the DLQ")

	// The retried messages die again.
	back, err := s.ListLive(ctx, store.LiveFilter{Queue: q}, "", 100)
	if err != nil || len(back.Items) != 5 {
		t.Fatalf("live messages = %d, %v; want the 5 retried", len(back.Items), err)
	}
	ids := make([]int64, len(back.Items))
	for i, m := range back.Items {
		ids[i] = m.MsgID
	}
	deadIDs(t, s, q, dlq, ids, "Declined", store.ReasonMaxRetriesExceeded)
	check("after dying again")

	if n, err := s.PurgeQueue(ctx, dlq); err != nil || n == 0 {
		t.Fatalf("purge the DLQ = %d, %v", n, err)
	}
	if gs := check("after deleting every row"); gs == nil || len(gs) != 0 {
		t.Fatalf("groups of an empty DLQ = %#v, want an empty list", gs)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != 0 {
		t.Fatalf("%d groups left for an empty DLQ", n)
	}

	deadN(t, s, q, 3, charge, "Declined", store.ReasonMaxRetriesExceeded)
	if _, err := s.Pool().Exec(ctx, `TRUNCATE pgmq."q_`+dlq+`"`); err != nil {
		t.Fatal(err)
	}
	if gs := check("after truncating"); len(gs) != 0 {
		t.Fatalf("groups of a truncated DLQ:%s", dumpGroups(gs))
	}

	deadN(t, s, q, 3, charge, "Declined", store.ReasonMaxRetriesExceeded)
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if n := dlCount(t, s, `SELECT (SELECT count(*) FROM pgbus.dlq_groups WHERE dlq = $1) + (SELECT count(*) FROM pgbus.dlq_group_deltas WHERE dlq = $1)`, dlq); n != 0 {
		t.Fatalf("%d base and delta rows left for a dropped DLQ", n)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	deadN(t, s, q, 2, charge, "Declined", store.ReasonMaxRetriesExceeded)
	if gs := check("after dropping and creating the queue again"); len(gs) != 1 || gs[0].Count != 2 {
		t.Fatalf("summary of the new queue:%s", dumpGroups(gs))
	}
}

// The summary reads the counts, not the messages, and the depth in the
// stats too: wrong counts show, until a backfill recounts them.
func TestDeadGroupsAreRead(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	deadN(t, s, q, 3, "k", "E", store.ReasonNonRetryable)
	if _, err := s.FoldDeadCounts(ctx); err != nil {
		t.Fatal(err)
	}
	if tag, err := s.Pool().Exec(ctx, `UPDATE pgbus.dlq_groups SET count = count + 1000 WHERE dlq = $1`, dlq); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("corrupt the folded count: %v, %v", tag, err)
	}
	if gs := summaryOf(t, s, store.DeadFilter{Queue: q}).Groups; len(gs) != 1 || gs[0].Count != 1003 {
		t.Fatalf("summary with counts off by 1000:%s", dumpGroups(gs))
	}
	if d := dlqDepth(t, s, q); d != 1003 {
		t.Fatalf("DLQ depth = %d, want the count 1003", d)
	}
	var n int64
	if err := s.Pool().QueryRow(ctx, `SELECT pgbus.dlq_groups_backfill($1)`, dlq).Scan(&n); err != nil || n != 1 {
		t.Fatalf("backfill = %d, %v", n, err)
	}
	if gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after the backfill"); len(gs) != 1 || gs[0].Count != 3 {
		t.Fatalf("summary after the backfill:%s", dumpGroups(gs))
	}
	if d := dlqDepth(t, s, q); d != 3 {
		t.Fatalf("DLQ depth after the backfill = %d, want 3", d)
	}
}

// A DLQ made before migration 0007, or by another PGMQ client, has no
// triggers: it is scanned until attached, and attaching (what the migration
// does to every DLQ, and CreateQueue to its own) counts what it holds.
// Rows written with the triggers disabled are recounted by a backfill.
func TestDeadGroupsBackfill(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	base := uniqueName("foreign")
	dlq := store.DLQName(base)
	kind := uniqueName("kind")
	_, err := s.Pool().Exec(ctx, `
		CREATE TABLE pgmq."q_`+dlq+`" (
			msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
		CREATE TABLE pgmq."a_`+dlq+`" (
			msg_id bigint PRIMARY KEY, read_ct int NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(),
			archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
		INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('`+dlq+`', false, false)`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Pool().Exec(context.Background(), `DROP TABLE pgmq."q_`+dlq+`"; DROP TABLE pgmq."a_`+dlq+`";
			DELETE FROM pgmq.meta WHERE queue_name = '`+dlq+`'; SELECT pgbus.dlq_groups_forget('`+dlq+`')`)
	})
	insert := func(n int, class string) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+dlq+`" (vt, enqueued_at, message, headers)
			SELECT now(), now() - g * interval '1 second', jsonb_build_object('n', g),
			       jsonb_build_object('pgbus_kind', $1::text, 'pgbus_dead_letter', jsonb_build_object(
			           'reason', CASE WHEN g % 2 = 0 THEN 'non_retryable_error' ELSE 'max_retries_exceeded' END,
			           'source_queue', $2::text, 'error_class', $3::text || (g % 3)))
			FROM generate_series(1, $4::int) g`, kind, base, class, n)
		if err != nil {
			t.Fatal(err)
		}
	}
	insert(40, "Old")
	f := store.DeadFilter{Kind: kind}
	untracked := summaryOf(t, s, f)
	if len(untracked.Groups) != 3 || untracked.Groups[0].Count != 14 {
		t.Fatalf("summary of an untracked DLQ:%s", dumpGroups(untracked.Groups))
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != 0 {
		t.Fatalf("%d groups for a DLQ without triggers", n)
	}

	for range 2 { // attaching twice changes nothing more
		var ok bool
		if err := s.Pool().QueryRow(ctx, `SELECT pgbus.dlq_groups_attach($1)`, dlq).Scan(&ok); err != nil || !ok {
			t.Fatalf("attach = %v, %v", ok, err)
		}
		gs := checkGroups(t, s, dlq, f, "after attaching")
		if !sameGroups(gs, untracked.Groups) {
			t.Fatalf("attached summary:%s\nwant%s", dumpGroups(gs), dumpGroups(untracked.Groups))
		}
		if n := dlCount(t, s, `SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass($1)`, `pgmq."q_`+dlq+`"`); n != 4 {
			t.Fatalf("%d triggers on the DLQ, want 4", n)
		}
	}
	insert(9, "New")
	checkGroups(t, s, dlq, f, "after inserting with the triggers")

	// Written behind the triggers' back: the summary falls back to the
	// messages while they are off, the counts are wrong once they are on,
	// and a backfill repairs them.
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+dlq+`" DISABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	insert(12, "Hidden")
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgmq."q_`+dlq+`" WHERE message->>'n' = '1' AND headers->'pgbus_dead_letter'->>'error_class' = 'Old1'`); err != nil {
		t.Fatal(err)
	}
	off := summaryOf(t, s, f)
	f.Since = epoch
	if scan := summaryOf(t, s, f); !sameGroups(off.Groups, scan.Groups) || len(off.Groups) != 9 {
		t.Fatalf("summary with the triggers off:%s\nfrom messages:%s", dumpGroups(off.Groups), dumpGroups(scan.Groups))
	}
	f.Since = time.Time{}
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+dlq+`" ENABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	if n := dlCount(t, s, `SELECT sum(count) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != 49 {
		t.Fatalf("counts after writing with the triggers off add up to %d, want the stale 49", n)
	}
	var n int64
	if err := s.Pool().QueryRow(ctx, `SELECT pgbus.dlq_groups_backfill($1)`, dlq).Scan(&n); err != nil || n != 18 {
		t.Fatalf("backfill = %d, %v; want 18 rows (9 groups by 2 reasons)", n, err)
	}
	if gs := checkGroups(t, s, dlq, f, "after the backfill"); len(gs) != 9 {
		t.Fatalf("summary after the backfill:%s", dumpGroups(gs))
	}
}

// Dead-lettering into one DLQ from many connections at once, each batch
// spanning several groups, while others retry and discard from it: no
// deadlock, and the counts stay exact.
func TestDeadGroupsConcurrentWriters(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	kinds := []string{uniqueName("ka"), uniqueName("kb"), uniqueName("kc")}
	const writers, rounds, batch = 8, 40, 6
	var writing, others sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		writing.Go(func() {
			for r := range rounds {
				msgs := make([]store.NewMessage, batch)
				for i := range msgs {
					msgs[i] = store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(fmt.Sprintf(`{"pgbus_kind":%q}`, kinds[(w+i)%len(kinds)]))}
				}
				ids, err := s.SendBatch(ctx, q, msgs)
				if err != nil {
					errs <- err
					return
				}
				items := make([]store.DeadLetterItem, len(ids))
				for i, id := range ids {
					items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3,
						Failure: &store.Failure{Attempt: 3, ErrorClass: fmt.Sprintf("E%d", (r+i)%2), ErrorMessage: "boom"}}
				}
				if _, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, items); err != nil {
					errs <- fmt.Errorf("writer %d round %d: %w", w, r, err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	for _, op := range []string{"retry", "discard"} {
		others.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				page, err := s.ListDead(ctx, store.DeadFilter{Queue: q}, "", 4)
				if err != nil {
					errs <- err
					return
				}
				var ids []int64
				for _, it := range page.Items {
					ids = append(ids, it.MsgID)
				}
				if len(ids) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				if op == "retry" {
					_, err = s.RetryDead(ctx, q, ids, store.RetryOptions{})
				} else {
					_, err = s.DiscardDead(ctx, q, ids)
				}
				if err != nil && len(ids) > 1 {
					errs <- fmt.Errorf("%s: %w", op, err)
					return
				}
			}
		})
	}
	writing.Wait()
	close(done)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	dead := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`)
	archived := dlCount(t, s, `SELECT count(*) FROM pgmq."a_`+dlq+`"`)
	retried := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`)
	if dead+archived+retried != writers*rounds*batch || retried == 0 || archived == 0 || dead == 0 {
		t.Fatalf("dead %d + discarded %d + retried %d, want %d in all and some of each", dead, archived, retried, writers*rounds*batch)
	}
	gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "after concurrent writers")
	if len(gs) != 6 {
		t.Fatalf("want 3 kinds by 2 classes:%s", dumpGroups(gs))
	}
}

// Only the largest MaxDeadGroups groups are listed; among groups of the
// same size the newest come first, as in the scan.
func TestDeadGroupsCap(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const groups = store.MaxDeadGroups + 20
	// Classes 0..259 get three messages, the others two: the cut falls
	// among the groups of two.
	_, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+dlq+`" (vt, enqueued_at, message, headers)
		SELECT now(), now() - g * interval '1 millisecond', '{}',
		       jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter', jsonb_build_object(
		           'reason', 'max_retries_exceeded', 'source_queue', $1::text, 'error_class', 'C' || (g % $2)))
		FROM generate_series(1, $2 * 2 + 260) g`, q, groups)
	if err != nil {
		t.Fatal(err)
	}
	gs := checkGroups(t, s, dlq, store.DeadFilter{Queue: q}, "over the cap")
	sum := summaryOf(t, s, store.DeadFilter{Queue: q})
	if len(gs) != store.MaxDeadGroups || sum.TotalGroups != groups || !sum.Truncated || gs[259].Count != 3 || gs[260].Count != 2 {
		t.Fatalf("%d groups of %d (truncated %v), counts %d, %d", len(gs), sum.TotalGroups, sum.Truncated, gs[259].Count, gs[260].Count)
	}
	if under := summaryOf(t, s, store.DeadFilter{Queue: q, ErrorClass: "C7"}); len(under.Groups) != 1 || under.TotalGroups != 1 || under.Truncated {
		t.Fatalf("one group = %+v", under)
	}
}

// Keys are hashed: a kind far longer than a btree entry can hold still
// dead-letters and is summarized.
func TestDeadGroupsHugeKind(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	b := make([]byte, 5000)
	_, _ = rand.Read(b)
	kind := hex.EncodeToString(b) // 10,000 characters that do not compress
	deadN(t, s, q, 2, kind, "E", store.ReasonNonRetryable)
	gs := checkGroups(t, s, store.DLQName(q), store.DeadFilter{Queue: q}, "with a huge kind")
	if len(gs) != 1 || gs[0].Kind != kind || gs[0].Count != 2 {
		t.Fatalf("summary:%s", dumpGroups(gs))
	}
}

// A group says how often its newest message had been retried out of a
// DLQ before it died again, the same from the maintained counts as from
// the messages; an older message's trips, or a value a block cannot hold,
// count for nothing.
func TestDeadGroupsSayTheNewestCameBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	headers := func(kind string, trips any) string {
		b, _ := json.Marshal(map[string]any{"pgbus_kind": kind, "pgbus_dlq_retries": trips})
		return string(b)
	}
	pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Kind: "back", Headers: headers("back", 3)},
		pgtest.DeadSpec{Kind: "back", Headers: headers("back", 1)},
		pgtest.DeadSpec{Kind: "older", Headers: headers("older", 2)},
		pgtest.DeadSpec{Kind: "older"},
		pgtest.DeadSpec{Kind: "odd", Headers: headers("odd", "many")},
		pgtest.DeadSpec{Kind: "huge", Headers: headers("huge", 1e12)})
	want := map[string]int{"back": 1, "older": 0, "odd": 0, "huge": 0}
	groups := checkGroups(t, s, store.DLQName(q), store.DeadFilter{Queue: q}, "trips")
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d:%s", len(groups), len(want), dumpGroups(groups))
	}
	for _, g := range groups {
		if g.RetriesFromDLQ != want[g.Kind] {
			t.Errorf("group of kind %s: retries_from_dlq %d, want %d (its newest message's)", g.Kind, g.RetriesFromDLQ, want[g.Kind])
		}
	}
}
