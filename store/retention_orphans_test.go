package store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Another PGMQ client's pgmq.delete, pgmq.archive and pgmq.purge_queue on
// queues that still exist take away messages pgbus recorded failures of,
// and leave that history behind: retention deletes the history of every
// message that is in neither its queue nor its archive, in batches, and
// keeps that of every message still there (live, archived, dead, or
// discarded into the DLQ's archive).
func TestRetentionPrunesTheFailuresOfMessagesOthersDeleted(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t) // a database of its own: retention reads every queue
	if err := pgtest.RunSQL(t, url, pgtest.PGMQScript(t)); err != nil {
		t.Fatalf("PGMQ's script on a fresh database: %v", err)
	}
	s := openStore(t, url)
	ctx := testContext(t)
	if st, err := s.Migrate(ctx); err != nil || !st.PGMQFunctions {
		t.Fatalf("migrate after PGMQ = %+v, %v; want PGMQ's functions found", st, err)
	}
	q, purged, untouched := "orph", "orph_purged", "orph_untouched"
	for _, name := range []string{q, purged, untouched} {
		if err := s.CreateQueue(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	fail := func(queue string, ids []int64) {
		t.Helper()
		for attempt := 1; attempt <= 2; attempt++ {
			items := make([]store.RetryItem, len(ids))
			for i, id := range ids {
				items[i] = store.RetryItem{MsgID: id, Failure: store.Failure{Attempt: attempt, ErrorClass: "Boom", ErrorMessage: "boom"}}
			}
			if done, err := s.RetryMany(ctx, queue, items); err != nil || len(done) != len(ids) {
				t.Fatalf("record failures of %s %v: %v, %v", queue, ids, done, err)
			}
		}
	}
	ids := sendN(t, s, q, 8)
	fail(q, ids)
	dead := deadN(t, s, q, 4, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	other := sendN(t, s, purged, 3)
	fail(purged, other)
	if _, err := s.Pool().Exec(ctx, fmt.Sprintf(`INSERT INTO pgmq.a_%[1]s (msg_id, vt, message) VALUES (1000, now(), '{}');
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ('%[1]s', 1000, 1, 'Boom', 'archived before')`, purged)); err != nil {
		t.Fatal(err)
	}
	kept := sendN(t, s, untouched, 2)
	fail(untouched, kept)
	dlq := store.DLQName(q)
	for _, sql := range []string{
		fmt.Sprintf(`SELECT pgmq.delete('%s', %d::bigint)`, q, ids[0]),
		fmt.Sprintf(`SELECT pgmq.delete('%s', ARRAY[%d, %d]::bigint[])`, q, ids[1], ids[2]),
		fmt.Sprintf(`SELECT pgmq.archive('%s', %d::bigint)`, q, ids[3]),
		fmt.Sprintf(`SELECT pgmq.delete('%s', %d::bigint)`, dlq, dead[0]),
		fmt.Sprintf(`SELECT pgmq.archive('%s', %d::bigint)`, dlq, dead[1]),
		fmt.Sprintf(`SELECT pgmq.purge_queue('%s')`, purged),
	} {
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	history := func(queue string) string {
		t.Helper()
		var got string
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(msg_id || '/' || attempt, ' ' ORDER BY msg_id, attempt), '')
			FROM pgbus.failures WHERE queue_name = $1`, queue).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	of := func(ids []int64, attempts ...int) string {
		var parts []string
		for _, id := range ids {
			for _, a := range attempts {
				parts = append(parts, fmt.Sprintf("%d/%d", id, a))
			}
		}
		return strings.Join(parts, " ")
	}
	want := map[string]string{
		q:         of(ids[3:], 1, 2),
		dlq:       of(dead[1:], 5),
		purged:    "1000/1",
		untouched: of(kept, 1, 2),
	}

	rep, err := s.RunRetention(ctx, 2, 0) // batches of 2 messages: several of each queue
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	for queue, w := range want {
		if got := history(queue); got != w {
			t.Errorf("failure history of %s after retention: %q; want %q", queue, got, w)
		}
	}
	if rep.OrphanFailuresDeleted != 3*2+1+3*2 {
		t.Errorf("retention reports %d failures of deleted messages; want %d", rep.OrphanFailuresDeleted, 3*2+1+3*2)
	}
	if rep, err = s.RunRetention(ctx, 2, 0); err != nil || rep.OrphanFailuresDeleted != 0 || rep.FailuresDeleted != 0 {
		t.Fatalf("second retention = %+v, %v; want no failures deleted", rep, err)
	}
	for queue, w := range want {
		if got := history(queue); got != w {
			t.Errorf("failure history of %s after a second pass: %q; want %q", queue, got, w)
		}
	}
}
