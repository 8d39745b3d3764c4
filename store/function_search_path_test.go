package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// hotFunctions are pgbus's functions that a statement calls once per row:
// the keys DLQ indexes hold, computed at every dead-letter insert, and what
// the triggers count rows under. They take no search_path of their own,
// which would stop the planner expanding them in place (each call a
// function call of its own, several times slower, and an index expression
// sessions no longer match); they name PostgreSQL's functions, operators
// and types in full instead. Each query computes one over the corpus
// table keys.corpus that loadKeyCorpus fills, one text per row.
var hotFunctions = []struct{ fn, query string }{
	{"dlq_error_norm(text)", `SELECT pgbus.dlq_error_norm(c.e)::text FROM keys.corpus c ORDER BY c.id`},
	{"dlq_group_key(jsonb,jsonb)", `SELECT pgbus.dlq_group_key(c.h, c.m)::text FROM keys.corpus c ORDER BY c.id`},
	{"dlq_group_reason_key(jsonb,jsonb)", `SELECT pgbus.dlq_group_reason_key(c.h, c.m)::text FROM keys.corpus c ORDER BY c.id`},
	{"dlq_cause_key(jsonb,jsonb)", `SELECT pgbus.dlq_cause_key(c.h, c.m)::text FROM keys.corpus c ORDER BY c.id`},
	{"dlq_group_of(jsonb,jsonb)", `SELECT g::text FROM keys.corpus c, pgbus.dlq_group_of(c.h, c.m) g ORDER BY c.id`},
	{"dlq_group_from(text,text,text,text,text)", `SELECT g::text FROM keys.corpus c, pgbus.dlq_group_from(c.a, c.b, c.c, c.e, c.r) g ORDER BY c.id`},
}

// keyMessages are error messages of every shape the normalization treats
// apart: numbers with and without units, hex, uuids, quoted values,
// identifiers, unicode, the control characters it uses itself.
var keyMessages = []string{
	"", " ", "timeout", "timeout after 919ms", "timeout after 1544ms", "-42 degrees below 0.5",
	"version 3.14.15 of 1e10", "user357 not found", "order-12345 failed", "key k7Xq2Lp9 missing",
	`connection refused to "db-1.internal:5432"`, `value 'abc' is invalid`, "it's 'fine' isn't it",
	`payload {\"id\":\"x12\"} rejected`, "`rm -rf` failed", `say "hello world" and "x"`,
	"id 3f2504e0-4f89-11d3-9a0c-0305E82C3301 gone", "at 0xDEADBEEF and 0x1f", "sha deadbeef12 vs abcdefab",
	"échec de connexion : délai 30 s dépassé", "接続エラー 404 (東京)", "💥 boom 12 💥", "a   b\t\nc  ",
	"\x01wrapped\x02 \"q\x01\" x\x02", `duplicate key value violates unique constraint "users_email_key" (SQLSTATE 23505)`,
	"out of memory: 2048KB of 4GB, 3.5% used", "retry 3/5 in 250ms", "ERROR: relation \"public.t1\" does not exist",
	strings.Repeat("long message 1234 ", 60),
}

// loadKeyCorpus creates table keys.corpus over conn: every message under a few
// shapes of dead-letter headers (missing keys, numbers for strings, a kind
// from the message, nulls), with the five texts of dlq_group_from.
func loadKeyCorpus(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	ctx := testContext(t)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA keys; CREATE TABLE keys.corpus (id int PRIMARY KEY, h jsonb, m jsonb, e text, a text, b text, c text, r text)`); err != nil {
		t.Fatal(err)
	}
	shapes := []func(msg string) (h, m any){
		func(msg string) (any, any) {
			return map[string]any{"pgbus_kind": "mail.send", "pgbus_dead_letter": map[string]any{"source_queue": "orders",
				"error_class": "TimeoutError", "error_message": msg, "reason": "max_retries_exceeded"}}, map[string]any{"to": "a@b"}
		},
		func(msg string) (any, any) {
			return map[string]any{"pgbus_dead_letter": map[string]any{"source_queue": "ördérs", "error_class": 42,
				"error_message": msg}}, map[string]any{"job_class": "Billing::Charge"}
		},
		func(msg string) (any, any) {
			return map[string]any{"pgbus_kind": nil, "pgbus_dead_letter": map[string]any{"error_message": msg, "reason": nil}}, nil
		},
		func(msg string) (any, any) {
			return map[string]any{"pgbus_kind": "k", "pgbus_dead_letter": map[string]any{"source_queue": "", "error_class": "",
				"error_message": msg, "reason": "poison"}}, map[string]any{"job_class": 7}
		},
		func(string) (any, any) { return map[string]any{}, map[string]any{} },
		func(string) (any, any) { return nil, nil },
		func(msg string) (any, any) { return map[string]any{"pgbus_dead_letter": msg}, []any{msg} },
	}
	text := func(v any) any {
		if v == nil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	id := 0
	// The last message, past keyMessages, is a null.
	for mi := 0; mi <= len(keyMessages); mi++ {
		var e any
		msg := ""
		if mi < len(keyMessages) {
			msg = keyMessages[mi]
			e = msg
		}
		for si, shape := range shapes {
			id++
			h, m := shape(msg)
			// dlq_group_from takes the texts dlq_group_of reads; odd
			// shapes give it nulls and odd values too.
			a, b, c, r := any("orders"), any("mail.send"), any("TimeoutError"), any("max_retries_exceeded")
			switch si % 3 {
			case 1:
				a, b, c, r = "", "ünïcode", "42", nil
			case 2:
				a, b, c, r = nil, nil, nil, e
			}
			if _, err := conn.Exec(ctx, `INSERT INTO keys.corpus VALUES ($1, $2::jsonb, $3::jsonb, $4, $5, $6, $7, $8)`,
				id, text(h), text(m), e, a, b, c, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return id
}

// keyResults computes every hot function over the corpus.
func keyResults(t *testing.T, conn *pgx.Conn) map[string][]*string {
	t.Helper()
	out := map[string][]*string{}
	for _, h := range hotFunctions {
		rows, err := conn.Query(testContext(t), h.query)
		if err != nil {
			t.Fatalf("%s: %v", h.fn, err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[*string])
		if err != nil {
			t.Fatalf("%s: %v", h.fn, err)
		}
		out[h.fn] = vals
	}
	return out
}

// compareKeyResults reports each row where got differs from want.
func compareKeyResults(t *testing.T, what string, want, got map[string][]*string) {
	t.Helper()
	show := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return *p
	}
	for _, h := range hotFunctions {
		w, g := want[h.fn], got[h.fn]
		if len(w) != len(g) {
			t.Errorf("%s: pgbus.%s gives %d rows, want %d", what, h.fn, len(g), len(w))
			continue
		}
		bad := 0
		for i := range w {
			if show(w[i]) != show(g[i]) && bad < 3 {
				bad++
				t.Errorf("%s: pgbus.%s of corpus row %d is %q, want %q", what, h.fn, i+1, show(g[i]), show(w[i]))
			}
		}
	}
}

// Every function in schema pgbus is out of reach of its caller's
// search_path: it runs with its own (pg_catalog, pg_temp), or it is one
// of hotFunctions, whose bodies TestHotFunctionsIgnoreAShadowingPath
// checks under a path that shadows what they call, and which are never
// SECURITY DEFINER (a SECURITY DEFINER function, as the DLQ trigger's,
// runs with its own path). A function added without either fails here.
func TestEveryPgbusFunctionFixesItsSearchPath(t *testing.T) {
	// A database of its own: the shared one may have been migrated by
	// another build of this package.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	rows, err := s.Pool().Query(testContext(t), `
		SELECT p.oid::regprocedure::text, coalesce(p.proconfig, '{}'), l.lanname, p.prosecdef
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
		WHERE p.pronamespace = 'pgbus'::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	hot := map[string]bool{}
	for _, h := range hotFunctions {
		hot[h.fn] = true
	}
	seen := 0
	for rows.Next() {
		var fn, lang string
		var config []string
		var definer bool
		if err := rows.Scan(&fn, &config, &lang, &definer); err != nil {
			t.Fatal(err)
		}
		seen++
		fixed := false
		for _, c := range config {
			fixed = fixed || c == "search_path=pg_catalog, pg_temp"
		}
		switch {
		case hot[fn] && len(config) > 0:
			t.Errorf("%s, called once per row, has settings %q: the planner no longer expands it in place; name what it calls in full instead", fn, config)
		case hot[fn] && definer:
			t.Errorf("%s, called once per row, is SECURITY DEFINER: the planner no longer expands it in place", fn)
		case hot[fn] && lang != "sql":
			t.Errorf("%s, called once per row, is in %s: only a SQL function is expanded in place", fn, lang)
		case !hot[fn] && !fixed:
			t.Errorf("%s runs with its caller's search_path (proconfig %q): give it SET search_path = pg_catalog, pg_temp, or, if a statement calls it per row, name what it calls in full and add it to hotFunctions", fn, config)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no function in schema pgbus: the query finds none")
	}
}

// Migration 25 rewrote the hot functions' bodies, naming in full what
// they call; DLQ indexes hold their values, so each gives what it gave
// before for every input, and the planner still expands each in place.
func TestNamingInFullKeepsEveryKey(t *testing.T) {
	ctx := testContext(t)
	url, conn, before, s := keysBeforeMigration(t, 25, "pg_catalog.md5")
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	compareKeyResults(t, "after migration 25", before, keyResults(t, connect(t, url, "")))

	for _, h := range hotFunctions {
		rows, err := conn.Query(ctx, `EXPLAIN (VERBOSE) `+h.query)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if plan := strings.Join(lines, "\n"); strings.Contains(plan, "pgbus.dlq_") {
			t.Errorf("pgbus.%s is called, not expanded in place, in:\n%s", h.fn, plan)
		}
	}
}

// A session whose search_path lists a schema before pg_catalog, holding
// functions and operators named as those the hot functions call, gets
// what the default path gets from each, and none of that schema's code
// runs.
func TestHotFunctionsIgnoreAShadowingPath(t *testing.T) {
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	admin := connect(t, url, "")
	loadKeyCorpus(t, admin)
	want := keyResults(t, admin)

	// Each shadow counts its calls and answers other than PostgreSQL's.
	if _, err := admin.Exec(ctx, `
		CREATE SCHEMA ext;
		CREATE SEQUENCE ext.calls;
		CREATE FUNCTION ext.md5(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN '00000000000000000000000000000000'; END $$;
		CREATE FUNCTION ext.left(text, int) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'left'; END $$;
		CREATE FUNCTION ext.btrim(text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'btrim'; END $$;
		CREATE FUNCTION ext.regexp_replace(text, text, text, text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'regexp_replace'; END $$;
		CREATE FUNCTION ext.translate(text, text, text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'translate'; END $$;
		CREATE FUNCTION ext.chr(int) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'chr'; END $$;
		CREATE FUNCTION ext.length(text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 0; END $$;
		CREATE FUNCTION ext.random() RETURNS double precision LANGUAGE plpgsql VOLATILE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 1.0; END $$;
		CREATE FUNCTION ext.cat(text, text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'cat'; END $$;
		CREATE OPERATOR ext.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = ext.cat);
		CREATE FUNCTION ext.field_text(jsonb, text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN 'field'; END $$;
		CREATE OPERATOR ext.->> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = ext.field_text);
		CREATE FUNCTION ext.field(jsonb, text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM pg_catalog.nextval('ext.calls'); RETURN '{}'; END $$;
		CREATE OPERATOR ext.-> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = ext.field)`); err != nil {
		t.Fatal(err)
	}
	shadowed := connect(t, url, "")
	if _, err := shadowed.Exec(ctx, `SET search_path = ext, pg_catalog`); err != nil {
		t.Fatal(err)
	}
	var md5, cat, field string
	if err := shadowed.QueryRow(ctx, `SELECT md5('x'), 'a' || 'b', '{"a": "b"}'::jsonb ->> 'a'`).Scan(&md5, &cat, &field); err != nil {
		t.Fatal(err)
	}
	if md5 != strings.Repeat("0", 32) || cat != "cat" || field != "field" {
		t.Fatalf("md5, || and ->> give %q, %q, %q in the shadowed session: the schema's functions are not in its path", md5, cat, field)
	}
	calls := func() int64 {
		var n int64
		if err := admin.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ext.calls`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := calls()
	compareKeyResults(t, "under search_path ext, pg_catalog", want, keyResults(t, shadowed))
	if n := calls() - before; n != 0 {
		t.Errorf("pgbus's functions called the shadowing schema's %d times", n)
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

// A session open before migration 25 keeps finding dead letters by group
// through each DLQ's index of error groups. A session reads an index's
// expression once, with the functions in it expanded, and matches its
// statements' against that: the bodies named in full expand to the very
// expression the old ones did, so the index matches as before, without
// making sessions read it again.
func TestNamingInFullKeepsTheGroupIndexInUse(t *testing.T) {
	ctx := testContext(t)
	url, all := databaseAtVersion(t, 24)
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if !strings.Contains(all[24].SQL, "pg_catalog.md5") {
		t.Fatalf("migration 25 (%s) no longer names the functions' calls in full", all[24].Name)
	}
	q := uniqueName("q")
	pgtest.CreateQueue(t, s, q)
	table := "pgmq." + pgx.Identifier{"q_" + store.DLQName(q)}.Sanitize()

	session := func() *pgx.Conn {
		conn := connect(t, url, "")
		if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	older := session()
	plan := func(conn *pgx.Conn, when string) {
		t.Helper()
		rows, err := conn.Query(ctx, `EXPLAIN SELECT msg_id FROM `+table+`
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
	plan(older, "before the migration")
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	plan(older, "in a session open before the migration, after it")
	plan(session(), "in a session opened after the migration")
}

// keysBeforeMigration opens a database at the version before migration
// next, whose SQL must still hold marker, loads the key corpus and returns
// the keys the functions give it, with a connection and a store that
// migrates the rest.
func keysBeforeMigration(t *testing.T, next int, marker string) (string, *pgx.Conn, map[string][]*string, *store.Store) {
	t.Helper()
	url, all := databaseAtVersion(t, next-1)
	if !strings.Contains(all[next-1].SQL, marker) {
		t.Fatalf("migration %d (%s) no longer holds %q: this test is about it", next, all[next-1].Name, marker)
	}
	conn := connect(t, url, "")
	n := loadKeyCorpus(t, conn)
	before := keyResults(t, conn)
	if got := len(before["dlq_cause_key(jsonb,jsonb)"]); got != n {
		t.Fatalf("the corpus holds %d rows, dlq_cause_key gave %d", n, got)
	}
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return url, conn, before, s
}
