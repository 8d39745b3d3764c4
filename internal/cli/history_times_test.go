package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A folded run of identical failures shows when the first and the last
// happened: the last alone read as every attempt failing in one second,
// as if no backoff had come between them.
func TestDLQShowFoldedFailuresSpanTheirTimes(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	st := pgtest.OpenStore(t, d.url)
	q := pgtest.NewQueue(t, st, "spans")
	id := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Class: "http.500", Message: "upstream failed"})[0]
	spreadFailures(t, d)
	out := d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", q)
	if !strings.Contains(out, "1-3 (3x)") || !strings.Contains(out, "2026-01-01 10:00:00Z to 10:05:30Z") {
		t.Fatalf("dlq show:\n%s\nwant the folded row 1-3 (3x) from 2026-01-01 10:00:00Z to 10:05:30Z", out)
	}
	out = d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", q, "--full-history")
	if strings.Contains(out, " to ") || !strings.Contains(out, "2026-01-01 10:01:00Z") {
		t.Fatalf("dlq show --full-history:\n%s\nwant each failure at its own time", out)
	}
}

// spreadFailures makes the one failure recorded in d three alike, the
// first at 10:00, the next at 10:01 and the last at 10:05:30.
func spreadFailures(t *testing.T, d db) {
	t.Helper()
	var n int
	d.query(t, `WITH f AS (SELECT * FROM pgbus.failures ORDER BY id LIMIT 1),
		ins AS (INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message, failed_at)
			SELECT queue_name, msg_id, a, kind, error_class, error_message, at
			FROM f, (VALUES (2, timestamptz '2026-01-01 10:01:00Z'), (3, timestamptz '2026-01-01 10:05:30Z')) v(a, at) RETURNING 1),
		up AS (UPDATE pgbus.failures p SET attempt = 1, failed_at = '2026-01-01 10:00:00Z' FROM f WHERE p.id = f.id RETURNING 1)
		SELECT (SELECT count(*) FROM ins) + (SELECT count(*) FROM up)`, &n)
	if n != 3 {
		t.Fatalf("spread the failure over %d rows; want 3", n)
	}
}
