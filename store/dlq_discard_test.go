package store_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestDiscardAndPurgeDead(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	timeouts := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	bad := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	if n, err := s.DiscardDead(ctx, q, timeouts[:1]); err != nil || n != 1 {
		t.Fatalf("discard one = %d, %v", n, err)
	}
	_, err := s.DiscardDead(ctx, q, timeouts[:1])
	wantErr(t, "discard again", err, store.ErrNotFound, "may have been retried or discarded")
	if n, err := s.DiscardDead(ctx, dlq, []int64{timeouts[1], 999_999}); err != nil || n != 1 {
		t.Fatalf("discard two, one unknown = %d, %v", n, err)
	}
	var lastDone, lastTotal int
	progress := func(done, total int) { lastDone, lastTotal = done, total }
	if n, err := s.DiscardDeadMatching(ctx, store.DeadFilter{Queue: q, ErrorClass: "BadInput"}, 100, progress); err != nil || n != 2 {
		t.Fatalf("discard matching = %d, %v", n, err)
	}
	if lastDone != 2 || lastTotal != 2 {
		t.Fatalf("progress ended at %d of %d, want 2 of 2", lastDone, lastTotal)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."a_`+dlq+`" WHERE headers ? 'pgbus_dead_letter'`); n != 4 {
		t.Fatalf("archive holds %d, want 4", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatalf("DLQ holds %d, want the one left", n)
	}
	// Only the row archived two hours ago is older than an hour.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+dlq+`" SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, bad[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeDead(ctx, q, time.Hour); err != nil || n != 1 {
		t.Fatalf("purge older than 1h = %d, %v", n, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, dlq, bad[0]); n != 0 {
		t.Fatalf("%d failure rows of the purged message left", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, dlq, bad[1]); n != 1 {
		t.Fatal("failure rows of a message not purged were deleted")
	}
	var calls [][2]int
	purgeProgress := func(done, total int) { calls = append(calls, [2]int{done, total}) }
	if n, err := s.PurgeDead(ctx, dlq, 0, purgeProgress); err != nil || n != 3 {
		t.Fatalf("purge all = %d, %v", n, err)
	}
	// Counted first (0 of 3), then after each batch.
	if len(calls) < 2 || calls[0] != [2]int{0, 3} || calls[len(calls)-1] != [2]int{3, 3} {
		t.Fatalf("purge progress %v, want 0 of 3 first and 3 of 3 last", calls)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatal("purge touched a live DLQ message")
	}
	// Other tests share the database: over every DLQ, purge only what no
	// test can have made.
	if n, err := s.PurgeDead(ctx, "", 100*365*24*time.Hour); err != nil || n != 0 {
		t.Fatalf("purge every DLQ of century-old messages = %d, %v", n, err)
	}
}

// PurgeDead walks the DLQ's archive in archived_at order, oldest first,
// from where each batch ended: rows of one time split across batches (here 7 of them in
// batches of 3), rows written after younger ones but archived earlier, and
// rows of every age between all go when older than the age asked, with
// their failure history; recent rows, their history and live messages
// stay.
func TestPurgeDeadTakesEveryOldRowAcrossBatches(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	store.SetPurgeBatch(t, 3)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	a := `pgmq."a_` + dlq + `"`
	exec(t, s, `INSERT INTO `+a+` (msg_id, archived_at, vt, message)
		SELECT g, CASE WHEN g <= 7 THEN now() - interval '3 hours'
		               WHEN g <= 15 THEN now() - interval '2 hours' + g * interval '1 second'
		               WHEN g <= 20 THEN now()
		               ELSE now() - interval '5 hours' END, now(), '{}'
		FROM generate_series(1, 23) g;
		INSERT INTO pgmq."q_`+dlq+`" (msg_id, vt, message) OVERRIDING SYSTEM VALUE VALUES (100, now(), '{}');
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		SELECT '`+dlq+`', g, 1, 'E', 'boom' FROM unnest(ARRAY[1, 7, 12, 17, 23, 100]) g`)
	var old []time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT array_agg(archived_at ORDER BY archived_at) FROM `+a+`
		WHERE archived_at < now() - interval '1 hour'`).Scan(&old); err != nil {
		t.Fatal(err)
	}
	var last [2]int
	n, err := s.PurgeDead(ctx, q, time.Hour, func(done, total int) {
		last = [2]int{done, total}
		if done == 0 {
			return
		}
		// Oldest first: done rows gone, and none left older than the
		// done-th oldest, which an interrupted purge would leave behind.
		left := pgtest.Int(t, s, `SELECT count(*) FROM `+a+` WHERE archived_at < now() - interval '1 hour'`)
		older := pgtest.Int(t, s, `SELECT count(*) FROM `+a+` WHERE archived_at < $1`, old[done-1])
		if left != len(old)-done || older != 0 {
			t.Errorf("after %d purged, %d old rows left and %d older than the %d-th oldest; want %d and none", done, left, older, done, len(old)-done)
		}
	})
	if err != nil || n != 18 || last != [2]int{18, 18} {
		t.Fatalf("purged %d (%v), progress ended at %v; want the 18 rows older than an hour, 18 of 18", n, err, last)
	}
	var left, history string
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT string_agg(msg_id::text, ' ' ORDER BY msg_id) FROM `+a+`),
		(SELECT string_agg(msg_id::text, ' ' ORDER BY msg_id) FROM pgbus.failures WHERE queue_name = $1)`, dlq).Scan(&left, &history); err != nil {
		t.Fatal(err)
	}
	if left != "16 17 18 19 20" || history != "17 100" {
		t.Fatalf("left in the archive %q with failure history of %q; want the recent 16 to 20, and the history of 17 and of the live 100", left, history)
	}
	if live := pgtest.Live(t, s, dlq); live != 1 {
		t.Fatalf("%d live DLQ messages, want the 1 untouched", live)
	}
	if n, err := s.PurgeDead(ctx, q, time.Hour); err != nil || n != 0 {
		t.Fatalf("a second purge deleted %d, %v; want nothing", n, err)
	}
}

// Rows that come behind the walk of PurgeDead still go, as they did when
// every batch started at the oldest row: one another transaction held while
// the walk passed it, and one discarded by a transaction that committed
// after the walk had passed its time.
func TestPurgeDeadTakesRowsBehindTheWalk(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	store.SetPurgeBatch(t, 3)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	a := `pgmq."a_` + dlq + `"`
	exec(t, s, `INSERT INTO `+a+` (msg_id, archived_at, vt, message)
		SELECT g, now() - interval '2 hours' + g * interval '1 second', now(), '{}' FROM generate_series(1, 10) g`)
	var held pgx.Tx
	progress := func(done, _ int) {
		switch done {
		case 0: // before the first batch: another transaction holds row 2
			var err error
			if held, err = s.Pool().Begin(ctx); err != nil {
				t.Error(err)
				return
			}
			if _, err := held.Exec(ctx, `SELECT 1 FROM `+a+` WHERE msg_id = 2 FOR UPDATE`); err != nil {
				t.Error(err)
			}
		case 3: // the walk is past row 2 and row 11's time
			exec(t, s, `INSERT INTO `+a+` (msg_id, archived_at, vt, message) VALUES (11, now() - interval '3 hours', now(), '{}')`)
			if err := held.Rollback(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	if n, err := s.PurgeDead(ctx, q, time.Hour, progress); err != nil || n != 11 {
		t.Fatalf("purged %d (%v), want the 11 old rows", n, err)
	}
	if left := pgtest.Archived(t, s, dlq); left != 0 {
		t.Fatalf("%d rows left in the archive, want none", left)
	}
}
