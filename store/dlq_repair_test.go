package store_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// dlqParts is what CreateDLQ gives a DLQ, as the catalogs show it.
type dlqParts struct {
	Index, Stats, Analyzed, Groups bool
	Counted, Rows                  int // what its group counts sum to, and its messages
}

func partsOf(t *testing.T, s *store.Store, dlq string) dlqParts {
	t.Helper()
	var p dlqParts
	err := s.Pool().QueryRow(testContext(t), `SELECT
		to_regclass(format('pgmq.%I', 'q_' || $1 || '_enq_idx')) IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_statistic_ext WHERE stxnamespace = 'pgmq'::regnamespace AND stxname = 'q_' || $1 || '_filter_stats'),
		EXISTS (SELECT 1 FROM pg_stats_ext WHERE schemaname = 'pgmq' AND statistics_name = 'q_' || $1 || '_filter_stats'),
		to_regclass(format('pgmq.%I', 'q_' || $1 || '_cause_idx')) IS NOT NULL
		  AND pgbus.dlq_groups_tracked(to_regclass(format('pgmq.%I', 'q_' || $1))),
		(SELECT coalesce(sum(count), 0) FROM pgbus.dlq_group_counts WHERE dlq = $1)`, dlq).
		Scan(&p.Index, &p.Stats, &p.Analyzed, &p.Groups, &p.Counted)
	if err != nil {
		t.Fatal(err)
	}
	p.Rows = pgtest.Live(t, s, dlq)
	return p
}

func wantWhole(t *testing.T, what string, p dlqParts) {
	t.Helper()
	if !p.Index || !p.Stats || !p.Analyzed || !p.Groups || p.Counted != p.Rows {
		t.Fatalf("%s: %+v; want its index, its filter statistics analyzed, and group counts of all its messages", what, p)
	}
}

// strip takes from dlq everything CreateDLQ gives one, as a DLQ made by
// another PGMQ client lacks it all (and one an older pgbus made after
// migration 0014 its statistics).
func strip(t *testing.T, s *store.Store, dlq string) {
	t.Helper()
	id := func(suffix string) string { return pgx.Identifier{"pgmq", "q_" + dlq + suffix}.Sanitize() }
	_, err := s.Pool().Exec(testContext(t), `DROP STATISTICS `+id("_filter_stats")+`;
		DROP INDEX `+id("_enq_idx")+`; DROP INDEX `+id("_cause_idx")+`;
		DROP TRIGGER pgbus_dlq_groups_ins ON `+id("")+`; DROP TRIGGER pgbus_dlq_groups_del ON `+id("")+`;
		DROP TRIGGER pgbus_dlq_groups_upd ON `+id("")+`; DROP TRIGGER pgbus_dlq_groups_trunc ON `+id("")+`;
		SELECT pgbus.dlq_groups_forget('`+dlq+`')`)
	if err != nil {
		t.Fatal(err)
	}
}

// A DLQ made without what pgbus gives one (by an older pgbus still running
// after the migration, say) gets it back from the next Migrate, though
// the schema is current: its index, its filter statistics, analyzed, and
// its group counts, which count the messages dead-lettered meanwhile. The
// next Migrate finds nothing to repair.
func TestMigrateRepairsDLQMadeByAnOlderBuild(t *testing.T) {
	t.Parallel()
	_, s := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "a", Message: "boom"})
	strip(t, s, dlq)
	pgtest.DeadLetterN(t, s, q, 4, pgtest.DeadSpec{Kind: "b", Message: "bang"})
	if p := partsOf(t, s, dlq); p.Index || p.Stats || p.Groups || p.Counted != 0 {
		t.Fatalf("the stripped DLQ: %+v; want nothing of what CreateDLQ makes", p)
	}
	st, err := s.Migrate(ctx)
	if err != nil || st.Applied != 0 || !slices.Equal(st.DLQsRepaired, []string{dlq}) || len(st.DLQGaps) != 0 {
		t.Fatalf("migrate of a current schema with a stripped DLQ = %+v, %v; want %s repaired, nothing applied", st, err, dlq)
	}
	wantWhole(t, "the DLQ after migrate", partsOf(t, s, dlq))
	if st, err := s.Migrate(ctx); err != nil || len(st.DLQsRepaired) != 0 || len(st.DLQGaps) != 0 {
		t.Fatalf("migrate once more = %+v, %v; want nothing repaired", st, err)
	}
}

// A DLQ made with PGMQ's own pgmq.create, by another client, gets from
// Migrate what pgbus gives one.
func TestMigrateRepairsDLQMadeWithPGMQCreate(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	if err := pgtest.RunSQL(t, url, `SELECT pgmq.create('ext'); SELECT pgmq.create('ext_dlq');
		SELECT pgmq.send('ext_dlq', '{"n": 1}'::jsonb, '{"pgbus_kind": "k", "pgbus_dead_letter": {"error_class": "E", "reason": "r"}}'::jsonb);
		SELECT pgmq.send('ext_dlq', '{"n": 2}'::jsonb)`); err != nil {
		t.Fatal(err)
	}
	if p := partsOf(t, s, "ext_dlq"); p.Index || p.Stats || p.Groups {
		t.Fatalf("the DLQ pgmq.create made: %+v; want none of what CreateDLQ makes", p)
	}
	st, err := s.Migrate(testContext(t))
	if err != nil || !slices.Equal(st.DLQsRepaired, []string{"ext_dlq"}) || len(st.DLQGaps) != 0 {
		t.Fatalf("migrate = %+v, %v; want ext_dlq repaired", st, err)
	}
	p := partsOf(t, s, "ext_dlq")
	wantWhole(t, "ext_dlq after migrate", p)
	if p.Rows != 2 {
		t.Fatalf("ext_dlq holds %d messages, want 2", p.Rows)
	}
}

// Where nothing is missing, Migrate runs no statement on any DLQ: with
// another transaction holding every lock on a DLQ's table, which any
// repair would wait for, the owner's Migrate still finds nothing to do,
// and so does a role that may create nothing.
func TestMigrateWithNothingMissingTouchesNoDLQ(t *testing.T) {
	store.SetMigrationLockWaits(t, 200*time.Millisecond, 50*time.Millisecond, 600*time.Millisecond, time.Second)
	url, s := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "a"})
	tx, _ := holdInTx(t, url, "holder", `LOCK TABLE `+pgx.Identifier{"pgmq", "q_" + store.DLQName(q)}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	defer tx.Rollback(ctx) //nolint:errcheck
	if st, err := s.Migrate(ctx); err != nil || len(st.DLQsRepaired) != 0 || len(st.DLQGaps) != 0 {
		t.Fatalf("the owner's migrate with nothing missing = %+v, %v; want nothing repaired and no gap", st, err)
	}
	_, roleURL := operatorRole(t, url)
	if st, err := openStore(t, roleURL).Migrate(ctx); err != nil || len(st.DLQsRepaired) != 0 || len(st.DLQGaps) != 0 {
		t.Fatalf("an operator's migrate with nothing missing = %+v, %v; want nothing repaired and no gap", st, err)
	}
}

// operatorRole makes a role with the operator's grants of the README:
// rows, not tables.
func operatorRole(t *testing.T, url string) (role, roleURL string) {
	t.Helper()
	role, roleURL = pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; "+
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role+"; "+
		"GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	return role, roleURL
}

// A worker started as an operator's role, or a reader's, over a DLQ that
// lacks its statistics starts: its Migrate leaves the DLQ as it is and
// says what it lacks and which role adds it; the owner's Migrate does.
func TestMigrateAsARoleThatMayNotRepairStarts(t *testing.T) {
	t.Parallel()
	url, owner := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, owner)
	dlq := store.DLQName(q)
	pgtest.DeadLetterN(t, owner, q, 2, pgtest.DeadSpec{Kind: "a"})
	if _, err := owner.Pool().Exec(ctx, `DROP STATISTICS `+pgx.Identifier{"pgmq", "q_" + dlq + "_filter_stats"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	var ownerRole string
	if err := owner.Pool().QueryRow(ctx, `SELECT current_user::text`).Scan(&ownerRole); err != nil {
		t.Fatal(err)
	}
	operator, operatorURL := operatorRole(t, url)
	reader, readerURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, store.ReadGrants(reader))
	for role, roleURL := range map[string]string{operator: operatorURL, reader: readerURL} {
		st, err := openStore(t, roleURL).Migrate(ctx)
		if err != nil || len(st.DLQsRepaired) != 0 || len(st.DLQGaps) != 1 {
			t.Fatalf("migrate as %s = %+v, %v; want no error and the DLQ left as a gap", role, st, err)
		}
		g := st.DLQGaps[0]
		if g.DLQ != dlq || len(g.Missing) != 1 || !strings.Contains(g.Missing[0], "statistics") || g.Owner != ownerRole ||
			!strings.Contains(g.Reason, "does not own") || !strings.HasPrefix(g.Next, "migrate as role "+ownerRole) {
			t.Fatalf("the gap of migrate as %s = %+v; want %s lacking its statistics, owned by %s, repaired by its migrate", role, g, dlq, ownerRole)
		}
	}
	if p := partsOf(t, owner, dlq); p.Stats {
		t.Fatal("a role that may not create made the DLQ's statistics")
	}
	if st, err := owner.Migrate(ctx); err != nil || !slices.Equal(st.DLQsRepaired, []string{dlq}) {
		t.Fatalf("the owner's migrate = %+v, %v; want %s repaired", st, err, dlq)
	}
	wantWhole(t, "the DLQ after the owner's migrate", partsOf(t, owner, dlq))
}

// A DLQ whose table another transaction keeps locked is left as it is,
// after one bounded wait, and Migrate goes on; the next one repairs it.
func TestMigrateLeavesABusyDLQForLater(t *testing.T) {
	store.SetMigrationLockWaits(t, 200*time.Millisecond, 50*time.Millisecond, 600*time.Millisecond, time.Second)
	url, s := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "a"})
	strip(t, s, dlq)
	tx, _ := holdInTx(t, url, "holder", `LOCK TABLE `+pgx.Identifier{"pgmq", "q_" + dlq}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	st, err := s.Migrate(ctx)
	if err != nil || len(st.DLQsRepaired) != 0 || len(st.DLQGaps) != 1 || st.DLQGaps[0].DLQ != dlq ||
		len(st.DLQGaps[0].Missing) != 3 || !strings.Contains(st.DLQGaps[0].Reason, "locked") {
		t.Fatalf("migrate with the DLQ's table locked = %+v, %v; want no error and the DLQ left as a gap, locked", st, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Migrate(ctx); err != nil || !slices.Equal(st.DLQsRepaired, []string{dlq}) {
		t.Fatalf("migrate once the lock is gone = %+v, %v; want %s repaired", st, err, dlq)
	}
	wantWhole(t, "the DLQ after the lock", partsOf(t, s, dlq))
}

// A DLQ dropped between the catalog query and its repair needs nothing:
// the repair finds it gone and reports nothing done, with no error.
func TestRepairOfADroppedDLQ(t *testing.T) {
	t.Parallel()
	_, s := newMigratedDatabase(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	strip(t, s, dlq)
	pgtest.DropOutside(t, s, dlq)
	if done, err := store.RepairDLQ(testContext(t), s, dlq); done || err != nil {
		t.Fatalf("repair of a dropped DLQ = %v, %v; want nothing done, no error", done, err)
	}
}

// BenchmarkMigrateCurrent measures Migrate where the schema is current
// and no DLQ lacks anything, what every worker start pays: the schema
// check and the one catalog query that finds no DLQ to repair, whose cost
// grows with the catalog, not by a round trip per queue.
func BenchmarkMigrateCurrent(b *testing.B) {
	for _, n := range []int{10, 200} {
		b.Run(fmt.Sprintf("queues=%d", n), func(b *testing.B) {
			s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
			ctx := testContext(b)
			for i := range n {
				if err := s.CreateQueue(ctx, fmt.Sprintf("bench_%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if st, err := s.Migrate(ctx); err != nil || len(st.DLQsRepaired)+len(st.DLQGaps) != 0 {
					b.Fatalf("migrate = %+v, %v; want nothing to repair", st, err)
				}
			}
		})
	}
}

// A DLQ whose queue another transaction is creating or dropping (or
// another process repairing), which leaves it whole or gone, is left to
// that transaction: Migrate neither waits for it nor warns.
func TestMigrateLeavesADLQToItsQueuesCreator(t *testing.T) {
	store.SetMigrationLockWaits(t, 200*time.Millisecond, 50*time.Millisecond, 600*time.Millisecond, time.Second)
	url, s := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	strip(t, s, dlq)
	tx, _ := holdInTx(t, url, "creator", `SELECT pg_advisory_xact_lock(hashtext('pgbus.queue:' || $1))`, q)
	if st, err := s.Migrate(ctx); err != nil || len(st.DLQsRepaired) != 0 || len(st.DLQGaps) != 0 {
		t.Fatalf("migrate while the queue's lock is held = %+v, %v; want the DLQ left to its holder, no gap", st, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Migrate(ctx); err != nil || !slices.Equal(st.DLQsRepaired, []string{dlq}) {
		t.Fatalf("migrate once the lock is gone = %+v, %v; want %s repaired", st, err, dlq)
	}
}

// Workers starting together over a DLQ that lacks its parts repair it
// once, without errors or warnings.
func TestConcurrentMigratesRepairADLQOnce(t *testing.T) {
	t.Parallel()
	url, s := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	pgtest.DeadLetterN(t, s, q, 20, pgtest.DeadSpec{Kind: "a"})
	strip(t, s, dlq)
	stores := make([]*store.Store, 4)
	for i := range stores {
		stores[i] = openStore(t, url)
	}
	results := make([]store.MigrationStatus, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { results[i], errs[i] = stores[i].Migrate(ctx) })
	}
	wg.Wait()
	repaired := 0
	for i, st := range results {
		if errs[i] != nil || len(st.DLQGaps) != 0 {
			t.Fatalf("migrate %d = %+v, %v; want no error and no gap", i, st, errs[i])
		}
		repaired += len(st.DLQsRepaired)
	}
	if repaired > 1 {
		t.Fatalf("%d migrates repaired the DLQ; want at most one", repaired)
	}
	if st, err := s.Migrate(ctx); err != nil || repaired+len(st.DLQsRepaired) != 1 {
		t.Fatalf("migrate after them = %+v, %v; want the DLQ repaired once in all (%d before)", st, err, repaired)
	}
	wantWhole(t, "the DLQ after the migrates", partsOf(t, s, dlq))
}
