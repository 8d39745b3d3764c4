package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// These tests run PGMQ's own SQL installation script on databases of their
// own, in both orders, and speak to pgbus's queues through PGMQ's functions.

// describe lists what makes the tables of physical queue name what they
// are: columns with types, defaults and identity, indexes, constraints and
// the identity sequence.
func describe(t *testing.T, s *store.Store, name string) []string {
	t.Helper()
	return textRows(t, s, `
		SELECT format('%s column %s %s null=%s default=%s identity=%s', table_name, column_name, data_type,
		              is_nullable, coalesce(column_default, ''), coalesce(identity_generation, ''))
		FROM information_schema.columns WHERE table_schema = 'pgmq' AND table_name IN ($1, $2)
		UNION ALL
		SELECT format('%s index %s', tablename, indexdef) FROM pg_indexes
		WHERE schemaname = 'pgmq' AND tablename IN ($1, $2)
		UNION ALL
		SELECT format('%s constraint %s %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid))
		FROM pg_constraint c WHERE c.conrelid IN (to_regclass('pgmq.' || quote_ident($1)), to_regclass('pgmq.' || quote_ident($2)))
		UNION ALL
		SELECT format('sequence %s', to_regclass('pgmq.' || quote_ident($1 || '_msg_id_seq')))
		ORDER BY 1`, "q_"+name, "a_"+name)
}

// textRows runs query, whose rows are one text each, and returns them.
func textRows(t *testing.T, s *store.Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pgmqRead reads one message of queue with pgmq.read.
func pgmqRead(t *testing.T, s *store.Store, queue string) (id int64, message, headers string) {
	t.Helper()
	err := s.Pool().QueryRow(testContext(t), `SELECT msg_id, message::text, coalesce(headers::text, '') FROM pgmq.read($1, 30, 1)`, queue).
		Scan(&id, &message, &headers)
	if err != nil {
		t.Fatalf("pgmq.read(%s): %v", queue, err)
	}
	return id, message, headers
}

func listQueues(t *testing.T, s *store.Store) []string {
	t.Helper()
	return textRows(t, s, `SELECT queue_name::text FROM pgmq.list_queues() ORDER BY 1`)
}

// Without PGMQ, pgbus makes a queue's tables exactly as pgmq.create makes
// them: the same columns, defaults, identity, indexes and constraints.
func TestLayoutIsWhatPGMQCreateMakes(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	plain := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	if err := plain.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	withPGMQ := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, withPGMQ, script+`; SELECT pgmq.create('orders')`); err != nil {
		t.Fatalf("PGMQ's script on a fresh database: %v", err)
	}
	real, err := store.Open(ctx, withPGMQ)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	got, want := describe(t, plain, "orders"), describe(t, real, "orders")
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Fatalf("pgbus's tables of a queue differ from pgmq.create's:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// PGMQ first, then pgbus: pgbus creates and drops its queues with PGMQ's own
// functions, and PGMQ's functions serve them.
func TestPGMQScriptThenMigrate(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script on a fresh database: %v", err)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Migrate(ctx)
	if err != nil {
		t.Fatalf("migrate after PGMQ: %v", err)
	}
	if !st.PGMQFunctions || st.PGMQExtension {
		t.Fatalf("status = %+v, want PGMQ's functions found, without the extension", st)
	}
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if got := listQueues(t, s); !slices.Equal(got, []string{"orders", "orders_dlq"}) {
		t.Fatalf("pgmq.list_queues() = %v, want orders and orders_dlq", got)
	}
	checkMixedTraffic(t, s, "orders")

	if err := s.DropQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if got := listQueues(t, s); len(got) != 0 {
		t.Fatalf("pgmq.list_queues() after drop = %v, want none", got)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pg_class WHERE relnamespace = 'pgmq'::regnamespace AND relname LIKE '%orders%'`); n != 0 {
		t.Fatalf("%d relations of orders left after drop", n)
	}
}

// checkMixedTraffic sends with pgmq.send and reads with the store, and the
// other way round with pgmq.read and pgmq.archive.
func checkMixedTraffic(t *testing.T, s *store.Store, q string) {
	t.Helper()
	ctx := testContext(t)
	var sent int64
	if err := s.Pool().QueryRow(ctx, `SELECT * FROM pgmq.send($1, '{"from":"pgmq"}'::jsonb)`, q).Scan(&sent); err != nil {
		t.Fatalf("pgmq.send: %v", err)
	}
	got, err := s.Read(ctx, q, secondVT, 5)
	if err != nil || len(got) != 1 || got[0].ID != sent || string(got[0].Payload) != `{"from": "pgmq"}` {
		t.Fatalf("store read of pgmq.send's message = %+v, %v; want message %d", got, err, sent)
	}
	if ok, err := s.Archive(ctx, q, sent); err != nil || !ok {
		t.Fatalf("store archive = %v, %v", ok, err)
	}
	for _, name := range []string{q, store.DLQName(q)} {
		id, err := s.Send(ctx, name, store.NewMessage{Payload: json.RawMessage(`{"from":"pgbus"}`), Headers: json.RawMessage(`{"pgbus_kind":"k"}`)})
		if err != nil {
			t.Fatal(err)
		}
		gotID, message, headers := pgmqRead(t, s, name)
		if gotID != id || message != `{"from": "pgbus"}` || headers != `{"pgbus_kind": "k"}` {
			t.Fatalf("pgmq.read(%s) = %d %s %s, want message %d", name, gotID, message, headers, id)
		}
		var archived bool
		if err := s.Pool().QueryRow(ctx, `SELECT pgmq.archive($1::text, $2::bigint)`, name, id).Scan(&archived); err != nil || !archived {
			t.Fatalf("pgmq.archive(%s, %d) = %v, %v", name, id, archived, err)
		}
		if n := pgtest.Archived(t, s, name); n < 1 {
			t.Fatalf("archive of %s holds %d messages after pgmq.archive", name, n)
		}
	}
	var length int64
	if err := s.Pool().QueryRow(ctx, `SELECT total_messages FROM pgmq.metrics($1)`, q).Scan(&length); err != nil || length < 2 {
		t.Fatalf("pgmq.metrics(%s) total_messages = %d, %v; want at least 2", q, length, err)
	}
}

// pgbus first, then PGMQ: PGMQ's script alone stops at pgmq.meta, which
// pgbus made; InstallPGMQ runs it and adopts pgbus's queues, messages kept.
func TestMigrateThenInstallPGMQ(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	before, err := s.Send(ctx, "orders", store.NewMessage{Payload: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	layout := describe(t, s, "orders")

	err = pgtest.RunSQL(t, url, script)
	if err == nil || !strings.Contains(err.Error(), `relation "meta" already exists`) {
		t.Fatalf("PGMQ's script alone after pgbus = %v; want it to stop at pgmq.meta, which is why InstallPGMQ exists", err)
	}

	res, err := s.InstallPGMQ(ctx, script)
	if err != nil {
		t.Fatalf("install PGMQ after pgbus: %v", err)
	}
	if !res.Installed || res.Adopted != 2 {
		t.Fatalf("install = %+v, want installed with orders and orders_dlq adopted", res)
	}
	st, err := s.Migrate(ctx)
	if err != nil || !st.PGMQFunctions {
		t.Fatalf("migrate after installing PGMQ = %+v, %v", st, err)
	}
	if got := listQueues(t, s); !slices.Equal(got, []string{"orders", "orders_dlq"}) {
		t.Fatalf("pgmq.list_queues() = %v, want orders and orders_dlq", got)
	}
	if got := describe(t, s, "orders"); !slices.Equal(got, layout) {
		t.Fatalf("the tables of orders changed in the install:\n got %v\nwant %v", got, layout)
	}
	if id, message, _ := pgmqRead(t, s, "orders"); id != before || message != `{"n": 1}` {
		t.Fatalf("pgmq.read of the message sent before PGMQ = %d %s, want %d", id, message, before)
	}
	if _, err := s.Pool().Exec(ctx, `SELECT pgmq.delete('orders', $1::bigint)`, before); err != nil {
		t.Fatal(err)
	}
	checkMixedTraffic(t, s, "orders")

	// A queue made now goes through pgmq.create and looks like the old ones.
	if err := s.CreateQueue(ctx, "invoices"); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(t, s, "invoices"), strings.Join(layout, "\n"); strings.ReplaceAll(strings.Join(got, "\n"), "invoices", "orders") != want {
		t.Fatalf("a queue made after the install differs from one made before:\n got %v\nwant %v", got, layout)
	}

	again, err := s.InstallPGMQ(ctx, script)
	if err != nil || again.Installed || again.Adopted != 0 {
		t.Fatalf("second install = %+v, %v; want nothing done, as PGMQ is there", again, err)
	}
}

// InstallPGMQ on a fresh database is PGMQ first; a script that is not
// PGMQ's is refused and changes nothing.
func TestInstallPGMQFreshAndRefusals(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	s, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	_, err = s.InstallPGMQ(ctx, "CREATE TABLE public.t (id int)")
	if !errors.Is(err, store.ErrNotPGMQScript) || !strings.Contains(err.Error(), "pgmq.create") {
		t.Fatalf("install of another script = %v, want ErrNotPGMQScript naming what is missing", err)
	}
	// Shaped like PGMQ's, but it breaks half-way: nothing of it stays.
	broken := strings.Replace(script, "CREATE FUNCTION pgmq.create(", "CREATE FUNCTION pgmq.create(syntax error", 1)
	if _, err := s.InstallPGMQ(ctx, broken); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("install of a broken script = %v, want a failure saying nothing changed", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pgmq'`); n != 0 {
		t.Fatalf("schema pgmq exists after a failed install")
	}

	res, err := s.InstallPGMQ(ctx, script)
	if err != nil || !res.Installed || res.Adopted != 0 {
		t.Fatalf("install on a fresh database = %+v, %v", res, err)
	}
	if st, err := s.Migrate(ctx); err != nil || !st.PGMQFunctions {
		t.Fatalf("migrate after install = %+v, %v", st, err)
	}
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	checkMixedTraffic(t, s, "orders")
}

// A queue made by another PGMQ client (pgmq.create) is not made a queue
// with priority levels under its own name: workers would read only the
// levels, and its messages would wait unread. The refusal changes nothing.
func TestPriorityLevelsRefusedOverAQueuePGMQMade(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script+`; SELECT pgmq.create('orders'); SELECT pgmq.send('orders', '{"order":1}')`); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	err := s.CreatePriorityQueue(ctx, "orders", 3)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "without priority levels") {
		t.Fatalf("create orders with 3 levels over pgmq.create's orders: %v; want ErrInvalid saying it exists without levels", err)
	}
	if got := listQueues(t, s); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("pgmq.list_queues() after the refusal = %v, want orders alone", got)
	}
	if phys, err := s.PhysicalQueues(ctx, "orders"); err != nil || !slices.Equal(phys, []string{"orders"}) {
		t.Fatalf("physical queues of orders = %v, %v; want orders itself", phys, err)
	}
	if got := pgtest.Live(t, s, "orders"); got != 1 {
		t.Fatalf("orders holds %d messages, want its 1", got)
	}
	// Once dropped, the name takes levels.
	if err := s.DropQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, "orders", 3); err != nil {
		t.Fatalf("create orders with 3 levels after its drop: %v", err)
	}
}

// metaACL lists the privileges on pgmq.meta and on its columns, each as
// grantee, privilege and whether it may be granted on, in order.
func metaACL(t *testing.T, s *store.Store) []string {
	t.Helper()
	return textRows(t, s, `
		SELECT format('%s %s grantable=%s', CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type, a.is_grantable)
		FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = 'pgmq.meta'::regclass
		UNION ALL
		SELECT format('%s %s(%s) grantable=%s', CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type, att.attname, a.is_grantable)
		FROM pg_attribute att, aclexplode(att.attacl) a WHERE att.attrelid = 'pgmq.meta'::regclass AND att.attnum > 0
		ORDER BY 1`)
}

// PGMQ's script makes a new pgmq.meta in place of pgbus's: the privileges
// other roles had on it carry over, and a role that could read the queues
// before the install still can.
func TestInstallPGMQKeepsGrantsOnMeta(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	reader, readerURL := pgtest.NewRole(t, url)
	writer, _ := pgtest.NewRole(t, url)
	auditor, _ := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+reader+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+reader+
		"; GRANT SELECT, INSERT ON pgmq.meta TO "+writer+" WITH GRANT OPTION; GRANT SELECT (queue_name) ON pgmq.meta TO "+auditor)
	before := metaACL(t, s)
	for _, want := range []string{reader + " SELECT grantable=f", writer + " INSERT grantable=t", auditor + " SELECT(queue_name) grantable=f"} {
		if !slices.Contains(before, want) {
			t.Fatalf("privileges on pgmq.meta before the install = %v, want %q among them", before, want)
		}
	}

	if _, err := s.InstallPGMQ(ctx, script); err != nil {
		t.Fatalf("install PGMQ after pgbus: %v", err)
	}
	after := metaACL(t, s)
	for _, want := range before {
		if !slices.Contains(after, want) {
			t.Fatalf("privileges on pgmq.meta after the install = %v, want every one of before %v; %q is gone", after, before, want)
		}
	}

	r := openStore(t, readerURL)
	if _, err := r.CheckSchema(ctx); err != nil {
		t.Fatalf("schema check as the reader after the install: %v", err)
	}
	queues, err := r.ListQueues(ctx)
	if err != nil || len(queues) != 2 {
		t.Fatalf("queues as the reader after the install = %+v, %v; want orders and its DLQ", queues, err)
	}
}
