package store_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// pgmqOnlyRole makes a role with every right on schema pgmq's tables and
// sequences and none on schema pgbus, as a PGMQ client beside pgbus has,
// and returns a connection as it.
func pgmqOnlyRole(t *testing.T, url string) (role string, conn *pgx.Conn) {
	t.Helper()
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq TO "+role+"; "+
		"GRANT ALL ON ALL TABLES IN SCHEMA pgmq TO "+role+"; "+
		"GRANT ALL ON ALL SEQUENCES IN SCHEMA pgmq TO "+role)
	return role, connect(t, roleURL, "")
}

// dlqCountsAddUp fails the test unless the group counts of dlq add up to
// its rows.
func dlqCountsAddUp(t *testing.T, s *store.Store, dlq, when string) {
	t.Helper()
	rows := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.`+pgx.Identifier{"q_" + dlq}.Sanitize())
	counted := pgtest.Int(t, s, `SELECT coalesce(sum(count), 0) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq)
	if rows != counted {
		t.Errorf("%s: %s holds %d rows, its groups count %d", when, dlq, rows, counted)
	}
}

// A PGMQ client whose role has rights on schema pgmq alone uses a DLQ as
// any other queue: the DLQ's index and triggers, pgbus's, ask nothing of
// it on schema pgbus, and what it writes is counted in the DLQ's groups.
func TestPGMQOnlyRoleUsesDLQs(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := openStore(t, url)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k", Message: "order 7 failed"})
	role, conn := pgmqOnlyRole(t, url)
	var usage bool
	if err := conn.QueryRow(ctx, `SELECT has_schema_privilege($1, 'pgbus', 'USAGE')`, role).Scan(&usage); err != nil || usage {
		t.Fatalf("the role's USAGE on schema pgbus: %v, %v; want none", usage, err)
	}
	table := "pgmq." + pgx.Identifier{"q_" + dlq}.Sanitize()
	steps := []struct{ what, sql string }{
		{"count", `SELECT count(*) FROM ` + table},
		{"metrics_all", `SELECT count(*) FROM pgmq.metrics_all()`},
		{"metrics", `SELECT queue_length FROM pgmq.metrics('` + dlq + `')`},
		{"send", `SELECT pgmq.send('` + dlq + `', '{"n": 9}'::jsonb, '{"pgbus_kind": "k", "pgbus_dead_letter": {"source_queue": "` + q + `", "error_class": "E", "error_message": "order 9 failed"}}'::jsonb)`},
		{"send_batch", `SELECT count(*) FROM pgmq.send_batch('` + dlq + `', ARRAY['{"n": 10}', '{"n": 11}']::jsonb[])`},
		{"read", `SELECT count(*) FROM pgmq.read('` + dlq + `', 30, 2)`},
		{"archive", `SELECT pgmq.archive('` + dlq + `', (SELECT min(msg_id) FROM ` + table + `))`},
		{"delete", `SELECT pgmq.delete('` + dlq + `', (SELECT max(msg_id) FROM ` + table + `))`},
		{"set_vt", `SELECT count(*) FROM pgmq.set_vt('` + dlq + `', (SELECT min(msg_id) FROM ` + table + `), 0)`},
		{"pop", `SELECT count(*) FROM pgmq.pop('` + dlq + `')`},
	}
	for _, step := range steps {
		var n any
		if err := conn.QueryRow(ctx, step.sql).Scan(&n); err != nil {
			t.Fatalf("%s as a role with rights on schema pgmq only: %v", step.what, err)
		}
		dlqCountsAddUp(t, s, dlq, "after "+step.what)
	}
	if _, err := conn.Exec(ctx, `SELECT pgmq.purge_queue('`+dlq+`')`); err != nil {
		t.Fatalf("purge_queue as a role with rights on schema pgmq only: %v", err)
	}
	if _, err := conn.Exec(ctx, `TRUNCATE `+table); err != nil {
		t.Fatalf("TRUNCATE as a role with rights on schema pgmq only: %v", err)
	}
	dlqCountsAddUp(t, s, dlq, "after purge_queue and TRUNCATE")
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k"})
	dlqCountsAddUp(t, s, dlq, "after dead-lettering again")
}

// The trigger that counts a DLQ's groups runs with its owner's rights, so
// that a role with none on schema pgbus may write the DLQ; it counts only
// for tables in schema pgmq, where only their owner can attach it. A role
// that may only read pgbus's tables, attaching it to a table of its own
// named as a DLQ's, neither wipes nor adds to that DLQ's counts.
func TestDLQTriggerCountsOnlyPGMQTables(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, s := newMigratedDatabase(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Kind: "k"})
	reader, readerURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+reader+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+reader)
	conn := connect(t, readerURL, "")
	own := pgx.Identifier{"q_" + dlq}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE `+own+` (msg_id bigint, enqueued_at timestamptz, message jsonb, headers jsonb)`); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{
		`AFTER TRUNCATE ON ` + own + ` FOR EACH STATEMENT`,
		`AFTER INSERT ON ` + own + ` REFERENCING NEW TABLE AS pgbus_new FOR EACH STATEMENT`,
	} {
		if _, err := conn.Exec(ctx, `CREATE TRIGGER t`+uniqueName("x")+` `+spec+` EXECUTE FUNCTION pgbus.dlq_groups_track()`); err != nil {
			t.Fatal(err)
		}
	}
	for _, sql := range []string{
		`TRUNCATE ` + own,
		`INSERT INTO ` + own + ` SELECT 1, now(), '{}', '{"pgbus_kind": "forged"}' FROM generate_series(1, 5)`,
	} {
		_, err := conn.Exec(ctx, sql)
		if err == nil || !strings.Contains(err.Error(), "pgmq") {
			t.Errorf("%s on the reader's own table: %v; want a refusal naming schema pgmq", sql, err)
		}
	}
	if n := pgtest.Int(t, s, `SELECT coalesce(sum(count), 0) FROM pgbus.dlq_group_counts WHERE dlq = $1`, dlq); n != 3 {
		t.Errorf("the groups of %s count %d messages, want its 3", dlq, n)
	}
}

// Migration 31 spells the error normalization out in pgbus.dlq_cause_key,
// which called pgbus.dlq_error_norm, so that expanding the key of a DLQ's
// index names nothing in schema pgbus. Each key stays what it was, the
// normalization's own included (pgbus.dlq_group_of's group key, which the
// counts hold), and a session open before the migration still finds dead
// letters by group through the index: the key expands to the very
// expression it expanded to before.
func TestCauseKeySpelledOutKeepsEveryKey(t *testing.T) {
	ctx := testContext(t)
	url, _, before, s := keysBeforeMigration(t, 31, "dlq_cause_key")
	q := uniqueName("q")
	table := "pgmq." + pgx.Identifier{"q_" + store.DLQName(q)}.Sanitize()
	// The queue is made at version 30, and the older session reads its
	// index's expression before the migration.
	pgtest.CreateQueue(t, s, q)
	older := connect(t, url, "")
	groupPlan := func(c *pgx.Conn, when string) {
		t.Helper()
		if _, err := c.Exec(ctx, `SET enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		rows, err := c.Query(ctx, `EXPLAIN SELECT msg_id FROM `+table+`
			WHERE pgbus.dlq_cause_key(headers, message) = '00000000-0000-0000-0000-000000000000'
			ORDER BY pgbus.dlq_cause_key(headers, message), enqueued_at, msg_id LIMIT 1`, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.Join(lines, "\n"); !strings.Contains(text, "_cause_idx") {
			t.Errorf("%s, a lookup by group does not use the DLQ's index of error groups:\n%s", when, text)
		}
	}
	groupPlan(older, "before the migration")
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	after := connect(t, url, "")
	compareKeyResults(t, "after migration 31", before, keyResults(t, after))
	var differ int
	if err := after.QueryRow(ctx, `SELECT count(*) FROM keys.corpus c, pgbus.dlq_group_of(c.h, c.m) g
		WHERE g.group_key IS DISTINCT FROM pgbus.dlq_cause_key(c.h, c.m)`).Scan(&differ); err != nil {
		t.Fatal(err)
	}
	if differ != 0 {
		t.Errorf("after migration 31, pgbus.dlq_cause_key differs from pgbus.dlq_group_of's group key on %d corpus rows", differ)
	}
	groupPlan(older, "in a session open before the migration, after it")
	groupPlan(after, "in a session opened after the migration")
}
