package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A worker vacuums its queue's table once VacuumAfter messages were
// settled since the last vacuum, so that reads from the head of a backlog
// do not step over the dead rows of the messages done; and once the queue
// goes quiet, it gives the emptied table's space back.
func TestWorkerVacuumsItsQueueTable(t *testing.T) {
	s := testStore(t)
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
