package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A list over every DLQ reads only the DLQs that may hold messages: one
// whose group counts say it is empty is passed over, so that a lock on it
// (an ALTER TABLE or VACUUM FULL under way) does not hold the list up,
// while a DLQ whose counts are not kept is read as before.
func TestListDeadPassesOverEmptyDLQs(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	empty, full, untracked := newQueue(t, s), newQueue(t, s), newQueue(t, s)
	want := pgtest.DeadLetterN(t, s, full, 2, pgtest.DeadSpec{})
	exec(t, s, `ALTER TABLE pgmq."q_`+untracked+`_dlq" DISABLE TRIGGER pgbus_dlq_groups_ins`)
	want = append(want, pgtest.DeadLetterN(t, s, untracked, 1, pgtest.DeadSpec{})...) // counted by no group

	var page store.DeadPage
	notHeldUp(t, s, `LOCK TABLE `+pgx.Identifier{"pgmq", "q_" + empty + "_dlq"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`, func(ctx context.Context) (err error) {
		page, err = s.ListDead(ctx, store.DeadFilter{}, "", 10)
		return err
	})
	var got []int64
	for _, it := range page.Items {
		got = append(got, it.MsgID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v: those of the tracked DLQ and of the untracked one", got, want)
	}
}

// The depths of every queue pass over a queue table without a single
// block: a REINDEX of an empty queue's index under way, which locks the
// index, does not hold them up, and its counts are still read as 0.
func TestQueueDepthsPassOverEmptyTables(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	empty, full := newQueue(t, s), newQueue(t, s)
	if _, err := s.Send(ctx, full, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var stats []store.QueueStats
	notHeldUp(t, s, `REINDEX INDEX `+pgx.Identifier{"pgmq", "q_" + empty + "_vt_idx"}.Sanitize(), func(ctx context.Context) (err error) {
		stats, err = s.QueueStats(ctx, "", store.QueueStatsOptions{Archive: true})
		return err
	})
	got := map[string]int64{}
	for _, st := range stats {
		got[st.Queue] = st.Visible
	}
	if len(got) != 2 || got[empty] != 0 || got[full] != 1 {
		t.Errorf("visible %v, want 0 in %s and 1 in %s", got, empty, full)
	}
}

// notHeldUp runs call while another transaction holds what sql locks, and
// fails the test when call waits for that transaction.
func notHeldUp(t *testing.T, s *store.Store, sql string, call func(context.Context) error) {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var locker int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&locker); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		var waiting bool
		if err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))`, locker).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			_ = tx.Rollback(ctx)
			<-done
			t.Fatalf("waits for the lock of %s", sql)
		}
	}
}

// A dead message written with the DLQ's triggers off for the session
// (session_replication_role replica, as pg_restore --disable-triggers
// and logical replication write) is counted by no group, yet listed: the
// list passed over its DLQ as empty by the counts alone.
func TestListDeadShowsRowsTheCountsMissed(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	q := newQueue(t, s)
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := conn.QueryRow(ctx, `INSERT INTO `+pgx.Identifier{"pgmq", "q_" + q + "_dlq"}.Sanitize()+` (vt, message, headers) VALUES (now(), '{"x": 3}', '{}') RETURNING msg_id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`RESET session_replication_role`, `SELECT pg_stat_force_next_flush()`, `SELECT 1`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// The statistics reach the shared counts within a second or so.
	deadline := time.Now().Add(30 * time.Second)
	for {
		page, err := s.ListDead(ctx, store.DeadFilter{Queue: q}, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) == 1 && page.Items[0].MsgID == id {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("listed %+v; want the message %d written with the triggers off", page.Items, id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A summary over every DLQ, filtered by time, text or group as much as not,
// reads only the DLQs that may hold messages: each filtered way built one
// statement with an arm for every DLQ, empty ones included, which a fleet
// of hundreds of queues took seconds to plan, and a lock on an empty DLQ
// held the summary up.
func TestSummarizeDeadPassesOverEmptyDLQs(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	empty, full, untracked := newQueue(t, s), newQueue(t, s), newQueue(t, s)
	pgtest.DeadLetterN(t, s, full, 2, pgtest.DeadSpec{Kind: "a", Message: "boom"})
	exec(t, s, `ALTER TABLE pgmq."q_`+untracked+`_dlq" DISABLE TRIGGER pgbus_dlq_groups_ins`)
	pgtest.DeadLetterN(t, s, untracked, 1, pgtest.DeadSpec{Kind: "b", Message: "bang"}) // counted by no group
	lock := `LOCK TABLE ` + pgx.Identifier{"pgmq", "q_" + empty + "_dlq"}.Sanitize() + ` IN ACCESS EXCLUSIVE MODE`
	for _, f := range []store.DeadFilter{{}, {Since: time.Now().Add(-time.Hour)}, {Text: "b"}} {
		var sum store.DeadSummary
		notHeldUp(t, s, lock, func(ctx context.Context) (err error) {
			sum, err = s.SummarizeDeadReport(ctx, f)
			return err
		})
		if sum.TotalMessages != 3 || sum.TotalGroups != 2 {
			t.Errorf("filter %+v: %d messages in %d groups, want 3 in 2: those of the tracked DLQ and of the untracked one", f, sum.TotalMessages, sum.TotalGroups)
		}
	}
}
