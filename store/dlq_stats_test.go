package store_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/schema"
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
// DLQ now gets when it is created, and running it again changes nothing.
func TestMigrationAddsDLQFilterStatistics(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	statName := "q_" + dlq + "_filter_stats"
	count := func() int {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_statistic_ext
			WHERE stxnamespace = 'pgmq'::regnamespace AND stxname = $1`, statName).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("a new DLQ has %d filter statistics, want 1", n)
	}
	// As a DLQ created before the statistics existed.
	if _, err := s.Pool().Exec(ctx, `DROP STATISTICS `+pgx.Identifier{"pgmq", statName}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	all, err := schema.All()
	if err != nil || len(all) < 14 || all[13].Version != 14 {
		t.Fatalf("migrations: %d, %v", len(all), err)
	}
	for range 2 {
		if _, err := s.Pool().Exec(ctx, all[13].SQL); err != nil {
			t.Fatalf("migration 14: %v", err)
		}
		if n := count(); n != 1 {
			t.Fatalf("after migration 14 the DLQ has %d filter statistics, want 1", n)
		}
	}
}
