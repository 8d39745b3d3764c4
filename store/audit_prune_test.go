package store_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Each batch of PruneAudit walks the log's index on its time from where
// the last batch ended. It walked it from its start, over the entries of
// every entry deleted so far in the prune, which stay in the index until
// vacuum, and which a transaction held open elsewhere (a backup's, for an
// hour) keeps: the first prune of a large log (a retention shortened from
// 90 days to 30) read the index over and over, each batch longer than the
// last, until they ran past the database call timeout. Here 300 old
// entries go in batches of 30 while another session holds its snapshot:
// the index entries the prune reads stay near the 300 it deletes, where
// walks from the start read over 1,500.
func TestPruneAuditWalksOnFromTheLastBatch(t *testing.T) {
	url := pgtest.NewDatabase(t) // a database of its own: retention prunes the whole log
	admin := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	store.SetAuditPruneBatch(t, 30)
	exec(t, admin, `INSERT INTO pgbus.audit_log (at, client, tool)
		SELECT now() - interval '91 days' - g * interval '1 minute', 'cli', 'old' FROM generate_series(1, 300) g
		UNION ALL SELECT now(), 'cli', 'new'`)

	// A transaction of another session holds its snapshot: the entries
	// the prune deletes stay in the index, not dead to every transaction.
	held, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(ctx)
	tx, err := held.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pgbus.audit_log`).Scan(&n); err != nil || n != 301 {
		t.Fatalf("the held snapshot counts %d entries, %v", n, err)
	}

	// One connection, on which the prune's picks walk the index on the
	// time in its order, as on a large log (not a scan of the whole of so
	// small a table, sorted), and whose statistics are flushed for the
	// reads below.
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	defer s.Close()
	if _, err := pool.Exec(ctx, `SET enable_seqscan = off; SET enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	read := func() int64 {
		t.Helper()
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := pool.QueryRow(ctx, `SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 'pgbus.audit_log_at_idx'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := read()
	deleted, err := s.PruneAudit(ctx, 90*24*time.Hour)
	if err != nil || deleted != 300 {
		t.Fatalf("pruned %d, %v; want the 300 entries older than 90 days", deleted, err)
	}
	if got := read() - before; got > 2*300 {
		t.Fatalf("the prune read %d entries of the index on the time to delete 300 in batches of 30; want fewer than %d: each batch goes on from where the last ended", got, 2*300)
	}
}
