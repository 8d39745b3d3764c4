package store_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A DLQ carries statistics of the kind, error class and reason its list
// filters compare, so that the planner knows how many messages a filter on
// two of them keeps: without them it guesses one in 40,000 (two default
// equality guesses of 0.5%), reads the whole DLQ and sorts it instead of
// walking the newest-first index to the first page.
func TestDLQFilterStatistics(t *testing.T) {
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
