package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A worker vacuums its queue's table once VacuumAfter messages were
// settled since the last vacuum, so that reads from the head of a backlog
// do not step over the dead rows of the messages done; and once the queue
// goes quiet, it gives the emptied table's space back.
func TestWorkerVacuumsItsQueueTable(t *testing.T) {
	t.Parallel()
	// A database of its own: a statement of another test under way in the
	// same database keeps the dead rows the shrink would remove.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, s, nil)
	var ran atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.VacuumAfter = 50 })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	for i := range 120 {
		pgtest.Send(t, c, q, map[string]int{"n": i}, engine.SendOptions{})
	}
	// Autovacuum could shrink the table too: only the worker may here.
	if _, err := s.Pool().Exec(context.Background(), `ALTER TABLE pgmq."q_`+q+`" SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the messages to run", func() bool { return ran.Load() == 120 })
	// Only this worker vacuums by hand: autovacuum counts apart. The
	// statistics reach other sessions within seconds.
	pgtest.Eventually(t, time.Minute, "a vacuum of the queue table", func() bool {
		var n int64
		if err := s.Pool().QueryRow(context.Background(), `SELECT coalesce(vacuum_count, 0) FROM pg_stat_user_tables
			WHERE schemaname = 'pgmq' AND relname = $1`, "q_"+q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n >= 1
	})
	pgtest.Eventually(t, time.Minute, "the drained table to be shrunk to nothing", func() bool {
		var heap int64
		if err := s.Pool().QueryRow(context.Background(), `SELECT pg_relation_size($1::regclass)`, `pgmq."q_`+q+`"`).Scan(&heap); err != nil {
			t.Fatal(err)
		}
		return heap == 0
	})
}

// A worker whose role does not own the queue table (it may change rows
// only) runs every message, leaves the table to autovacuum and says so
// once, instead of a failed or skipped vacuum every VacuumAfter messages.
func TestWorkerLeavesATableItDoesNotOwnToAutovacuum(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := newQueue(t, owner, nil)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	s := pgtest.OpenStore(t, roleURL)
	if may, err := s.MayVacuum(context.Background(), q); may || err != nil {
		t.Fatalf("MayVacuum as a role owning nothing = %v, %v; want false", may, err)
	}
	if may, err := owner.MayVacuum(context.Background(), q); !may || err != nil {
		t.Fatalf("MayVacuum as the owner = %v, %v; want true", may, err)
	}
	if _, err := s.MayVacuum(context.Background(), "no_such_queue"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("MayVacuum of a missing queue: %v; want ErrNotFound", err)
	}

	var logs pgtest.SyncBuffer
	var ran atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.VacuumAfter = 20
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	for i := range 50 {
		pgtest.Send(t, c, q, map[string]int{"n": i}, engine.SendOptions{})
	}
	stop := pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the messages to run", func() bool { return ran.Load() == 50 })
	pgtest.Eventually(t, time.Minute, "the worker to say it leaves the table to autovacuum", func() bool {
		return strings.Contains(logs.String(), "does not own the queue table")
	})
	// The vacuum loop looks every second; a shrink of the quiet queue is
	// due at its next look.
	time.Sleep(3 * time.Second)
	stop()
	out := logs.String()
	if n := strings.Count(out, "does not own the queue table"); n != 1 || strings.Contains(out, "vacuuming the queue table failed") {
		t.Fatalf("the worker's log says %d times that it leaves the table to autovacuum (want once), or a vacuum failed:\n%s", n, out)
	}
	if n := pgtest.Archived(t, owner, q); n != 50 {
		t.Fatalf("%d of 50 messages archived", n)
	}
}
