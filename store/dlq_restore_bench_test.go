package store_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// BenchmarkListDiscarded measures ListDiscarded (pgbus dlq discarded) of a
// page of 100 archived messages that have no failure history under their
// DLQ (put there by another producer, or originals of retries made before
// the retry marked them), beside 300,000 rows of other queues' history.
// For each such message the list looks for the note of a retry with a
// corrected payload that names it; ten of them have one. It runs on a
// database of its own, filled and analyzed before the timer starts, and
// logs the plan once (EXPLAIN ANALYZE, BUFFERS).
func BenchmarkListDiscarded(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	q := newQueue(b, s)
	dlq := store.DLQName(q)
	fillDiscardedWithoutHistory(b, s, dlq, 100, 300_000)
	sql, args := store.ListDiscardedSQL(dlq, store.DiscardedFilter{}, 100)
	b.Log(explain(b, s, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...))
	b.ResetTimer()
	for b.Loop() {
		page, err := s.ListDiscarded(ctx, dlq, store.DiscardedFilter{}, "", 100)
		items := page.Items
		if err != nil || len(items) != 100 {
			b.Fatalf("listed %d of 100: %v", len(items), err)
		}
		originals := 0
		for _, it := range items {
			if it.RetryOriginal {
				originals++
			}
		}
		if originals != 10 {
			b.Fatalf("listed %d retry originals, want 10", originals)
		}
	}
}

// fillDiscardedWithoutHistory writes n messages into dlq's archive, with no
// failure history, and rows rows of failure history of another queue, of
// which one in a thousand is the note of a retry with a corrected payload
// naming an original in another DLQ's archive, and, among those, notes
// naming the first ten of dlq's archived messages; then analyzes both.
func fillDiscardedWithoutHistory(b *testing.B, s *store.Store, dlq string, n, rows int) {
	b.Helper()
	ctx := testContext(b)
	note := func(dlq string) string {
		return "'payload replaced on retry; the original message is kept in the archive of " + dlq + " (pgmq.a_" + dlq + ", msg_id ' || g || ') until purged or the queue's dead retention deletes it. Original payload: ' || repeat('x', 200)"
	}
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO pgmq."a_` + dlq + `" (msg_id, read_ct, enqueued_at, archived_at, vt, message)
			SELECT g, 1, now(), now() + g * interval '1 microsecond', now(), jsonb_build_object('job_class', 'k', 'order', g)
			FROM generate_series(1, $1::bigint) AS g`, []any{n}},
		{`INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			SELECT 'other', g, 1,
				CASE WHEN g % 1000 = 0 THEN '` + store.PayloadReplacedClass + `' ELSE 'Timeout' END,
				CASE WHEN g % 1000 = 0 THEN ` + note("other_dlq") + ` ELSE 'upstream timed out after 30s' END
			FROM generate_series(1, $1::bigint) AS g`, []any{rows}},
		{`INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
			SELECT 'other', $1::bigint + g, 0, '` + store.PayloadReplacedClass + `', ` + note(dlq) + `
			FROM generate_series(1, 10) AS g`, []any{rows}},
		{`ANALYZE pgmq."a_` + dlq + `", pgbus.failures`, nil},
	} {
		if _, err := s.Pool().Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("fill the archive of %s and the failure history: %v", dlq, err)
		}
	}
}

// explain runs an EXPLAIN statement and returns its plan as text.
func explain(tb testing.TB, s *store.Store, sql string, args ...any) string {
	tb.Helper()
	rows, err := s.Pool().Query(testContext(tb), sql, args...)
	if err != nil {
		tb.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
