package pgtest

import (
	"context"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// StuckCountersPrune opens a store on a database of its own (retention
// prunes every row) holding a worker row and a per-minute counter old
// enough to prune, with the counters' table locked against deletes until
// the test ends: retention's counters' step waits past any bound, and its
// later steps have the worker row to prune.
func StuckCountersPrune(tb testing.TB) *store.Store {
	tb.Helper()
	s := OpenStore(tb, NewDatabase(tb))
	ctx := Context(tb)
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "old", Hostname: "h", PID: 1, Queues: []string{"q"}, Concurrency: 1}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '8 days' WHERE id = 'old';
		INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', 'gone', '', 1)`); err != nil {
		tb.Fatal(err)
	}
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	if _, err := tx.Exec(ctx, `LOCK TABLE pgbus.stats_minute IN SHARE MODE`); err != nil {
		tb.Fatal(err)
	}
	return s
}
