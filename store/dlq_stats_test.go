package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A DLQ carries statistics of the kind, error class and reason its list
// filters compare, so that the planner knows how many messages a filter on
// two of them keeps: without them it guesses one in 40,000 (two default
// equality guesses of 0.5%), reads the whole DLQ and sorts it instead of
// walking the newest-first index to the first page.
func TestDLQFilterStatistics(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	// 5,000 messages over 10 error classes and 5 kinds: each class is of
	// one kind, so kind_2 with bench.Error7 keeps 500 messages. The load
	// analyzes the DLQ.
	if err := s.BulkLoadDead(ctx, q, 5000, 10); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	var raw []byte
	err = conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT msg_id FROM `+pgx.Identifier{"pgmq", "q_" + store.DLQName(q)}.Sanitize()+`
		WHERE coalesce(headers->>'pgbus_kind', message->>'job_class') = 'kind_2'
		  AND (headers->'pgbus_dead_letter')->>'error_class' = 'bench.Error7'`).Scan(&raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	if rows := plan[0].Plan.Rows; rows < 250 || rows > 1000 {
		t.Errorf("the planner expects %v of the 500 messages of kind_2 and bench.Error7; want an estimate within a factor of 2 (its statistics of the DLQ's filter columns are missing)", rows)
	}
}

// Migration 0014 gives the DLQs that existed before it the statistics a
// DLQ now gets when it is created, and running it again changes nothing. A
// DLQ of a PGMQ before 1.5, without headers, needs none and does not stop
// the migration; nor does one whose table another role owns, which the
// migration leaves to that role.
func TestMigrationAddsDLQFilterStatistics(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL, all := databaseAtVersion(t, 13)
	if all[13].Version != 14 {
		t.Fatalf("migration 14 is %d %s", all[13].Version, all[13].Name)
	}
	s, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	count := func(dlq string) int {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_catalog.pg_statistic_ext
			WHERE stxnamespace = 'pgmq'::regnamespace AND stxname = $1`, "q_"+dlq+"_filter_stats")
	}
	// Queues made before the statistics existed: a DLQ of pgbus's own, one
	// whose table another role owns, and one of an old PGMQ layout.
	for _, q := range []string{"orders", "theirs"} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `DROP STATISTICS pgmq.`+pgx.Identifier{"q_" + store.DLQName(q) + "_filter_stats"}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `
		CREATE TABLE pgmq.q_legacy_dlq (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb);
		INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('legacy_dlq', false, false)`); err != nil {
		t.Fatal(err)
	}
	// The migration as a role that owns only orders' DLQ: theirs is left.
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, `GRANT USAGE, CREATE ON SCHEMA pgmq TO `+role+`; GRANT USAGE ON SCHEMA pgbus TO `+role+`;
		GRANT SELECT ON pgmq.meta TO `+role+`;
		ALTER TABLE pgmq.q_orders_dlq OWNER TO `+role)
	cfg, err := pgx.ParseConfig(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	var notices []string // the migration says which DLQ it left, and why
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.HasPrefix(n.Message, "pgbus:") {
			notices = append(notices, n.Message)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for range 2 {
		if _, err := conn.Exec(ctx, all[13].SQL); err != nil {
			t.Fatalf("migration 14 as the owner of orders_dlq only: %v", err)
		}
		if o, th, l := count("orders_dlq"), count("theirs_dlq"), count("legacy_dlq"); o != 1 || th != 0 || l != 0 {
			t.Fatalf("after migration 14 as the owner of orders_dlq: filter statistics of orders_dlq %d, theirs_dlq %d, legacy_dlq %d; want 1, 0, 0", o, th, l)
		}
	}
	if len(notices) != 2 || !strings.Contains(notices[0], "DLQ theirs_dlq has no planner statistics") || !strings.Contains(notices[0], "must be owner") {
		t.Fatalf("the migration's notices: %q; want one per run naming theirs_dlq and why it was left", notices)
	}
	// The whole migration as the database's owner adds them to theirs too.
	if st, err := s.Migrate(ctx); err != nil || st.Applied != len(all)-13 {
		t.Fatalf("migrate from 13 = %+v, %v; want %d migrations applied", st, err, len(all)-13)
	}
	if o, th, l := count("orders_dlq"), count("theirs_dlq"), count("legacy_dlq"); o != 1 || th != 1 || l != 0 {
		t.Fatalf("after migrating: filter statistics of orders_dlq %d, theirs_dlq %d, legacy_dlq %d; want 1, 1, 0", o, th, l)
	}
}
