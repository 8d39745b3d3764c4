package store_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Every function in schema pgbus runs with its own search_path, so that
// a caller's path cannot change what it calls. A function added without
// the setting fails here.
func TestEveryPgbusFunctionFixesItsSearchPath(t *testing.T) {
	// A database of its own: the shared one may have been migrated by
	// another build of this package.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	rows, err := s.Pool().Query(testContext(t), `
		SELECT p.oid::regprocedure::text, coalesce(p.proconfig, '{}')
		FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'pgbus'::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var fn string
		var config []string
		if err := rows.Scan(&fn, &config); err != nil {
			t.Fatal(err)
		}
		seen++
		found := false
		for _, c := range config {
			found = found || c == "search_path=pg_catalog, pg_temp"
		}
		if !found {
			t.Errorf("%s runs with its caller's search_path (proconfig %q): give it SET search_path = pg_catalog, pg_temp", fn, config)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no function in schema pgbus: the query finds none")
	}
}

// A session whose search_path lists a schema before pg_catalog, holding
// functions named as PostgreSQL's, dead-letters as any other: the triggers
// that count groups call PostgreSQL's md5 and random, not that schema's,
// so groups keep their own keys and no code of the schema's runs.
func TestShadowingFunctionsLeaveDeadLetterGroupsAlone(t *testing.T) {
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := uniqueName("q")
	pgtest.CreateQueue(t, s, q)
	dlq := store.DLQName(q)

	admin := connect(t, url, "")
	if _, err := admin.Exec(ctx, `
		CREATE SCHEMA ext;
		CREATE TABLE ext.calls (fn text);
		CREATE FUNCTION ext.md5(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000000000000000000000000000'::text $$;
		CREATE FUNCTION ext.random() RETURNS double precision LANGUAGE sql VOLATILE AS $$ INSERT INTO ext.calls VALUES ('random') RETURNING 1.0::float8 $$`); err != nil {
		t.Fatal(err)
	}
	shadowed := connect(t, url, "")
	if _, err := shadowed.Exec(ctx, `SET search_path = ext, pg_catalog, public`); err != nil {
		t.Fatal(err)
	}
	var own string
	if err := shadowed.QueryRow(ctx, `SELECT md5('x')`).Scan(&own); err != nil || own != strings.Repeat("0", 32) {
		t.Fatalf("the session's md5 is %q (%v): the shadowing function is not in its path", own, err)
	}
	headers := func(class string) string {
		return `{"pgbus_kind": "k", "pgbus_dead_letter": {"source_queue": "` + q + `", "error_class": "` + class + `", "error_message": "m", "reason": "max_retries_exceeded"}}`
	}
	if _, err := shadowed.Exec(ctx, `INSERT INTO pgmq.`+pgx.Identifier{"q_" + dlq}.Sanitize()+` (vt, message, headers)
		VALUES (pg_catalog.now(), '{}', $1), (pg_catalog.now(), '{}', $2)`, headers("A"), headers("B")); err != nil {
		t.Fatal(err)
	}
	var same bool
	if err := shadowed.QueryRow(ctx, `SELECT pgbus.dlq_cause_key($1, '{}') = pgbus.dlq_cause_key($2, '{}')`, headers("A"), headers("B")).Scan(&same); err != nil {
		t.Fatal(err)
	}
	if same {
		t.Error("under the shadowing path two error classes share one group key: pgbus.dlq_cause_key called the schema's md5")
	}

	var groups, zero, calls int
	if err := admin.QueryRow(ctx, `
		SELECT count(DISTINCT group_key), count(*) FILTER (WHERE group_key = '00000000-0000-0000-0000-000000000000')
		FROM (SELECT group_key FROM pgbus.dlq_groups WHERE dlq = $1
		      UNION ALL SELECT group_key FROM pgbus.dlq_group_deltas WHERE dlq = $1) g`, dlq).Scan(&groups, &zero); err != nil {
		t.Fatal(err)
	}
	if groups != 2 || zero != 0 {
		t.Errorf("the DLQ's counts hold %d groups, %d of them with the all-zero key; want 2 groups of their own keys", groups, zero)
	}
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM ext.calls`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("dead-lettering ran the shadowing schema's random() %d times", calls)
	}
}

// A session open before the migration that fixed the functions' paths
// keeps finding dead letters by group through each DLQ's index of error
// groups: a function with a setting of its own is no longer expanded
// into the statements that call it, and the session would otherwise
// match them against the index's expression as it read it, expanded.
func TestFixedSearchPathKeepsTheGroupIndexInUse(t *testing.T) {
	ctx := testContext(t)
	url, all := databaseAtVersion(t, 24)
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if !strings.Contains(all[24].SQL, "SET search_path") {
		t.Fatalf("migration 25 (%s) no longer fixes the functions' search_path", all[24].Name)
	}
	q := uniqueName("q")
	pgtest.CreateQueue(t, s, q)
	table := "pgmq." + pgx.Identifier{"q_" + store.DLQName(q)}.Sanitize()

	older := connect(t, url, "")
	if _, err := older.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	plan := func(when string) {
		t.Helper()
		rows, err := older.Query(ctx, `EXPLAIN SELECT msg_id FROM `+table+`
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
	plan("before the migration")
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	plan("in a session open before the migration, after it")
}
