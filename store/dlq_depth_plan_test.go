package store_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// analyzedNode is a node of EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS).
type analyzedNode struct {
	Type      string         `json:"Node Type"`
	Relation  string         `json:"Relation Name"`
	Loops     float64        `json:"Actual Loops"`
	SharedHit int64          `json:"Shared Hit Blocks"`
	Read      int64          `json:"Shared Read Blocks"`
	Plans     []analyzedNode `json:"Plans"`
}

// walk calls fn on n and every node under it.
func (n analyzedNode) walk(fn func(analyzedNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// The depths of many queues read the DLQs' group counts once, whatever
// the statistics say of them. Once ANALYZE saw one DLQ hold nearly every
// group row, the planner expected half the table for any DLQ and scanned
// the whole of pgbus.dlq_groups once per queue and DLQ named: seconds for
// pgbus queues, health, /metrics and the overview of a few hundred queues.
func TestDepthsReadGroupCountsOnceWhateverTheStatistics(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	const queues = 60
	var names []string
	for range queues {
		q := pgtest.NewQueue(t, s, "skew")
		names = append(names, q, store.DLQName(q))
	}
	// One DLQ holds 100,000 groups, another 32: ANALYZE then counts two
	// DLQs in the table and expects half of it for any.
	insert := func(dlq string, from, to int) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, `INSERT INTO `+pgx.Identifier{"pgmq", "q_" + dlq}.Sanitize()+` (vt, message, headers)
			SELECT now(), '{}', jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter',
			       jsonb_build_object('source_queue', 'src', 'error_class', 'E' || g, 'reason', 'max_retries_exceeded'))
			FROM generate_series($1::int, $2::int) g`, from, to)
		if err != nil {
			t.Fatal(err)
		}
	}
	insert(names[1], 1, 100_000)
	insert(names[3], 1, 32)
	if _, err := s.FoldDeadCounts(ctx); err != nil {
		t.Fatal(err)
	}
	insert(names[3], 40, 41) // pending deltas, besides the base rows
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgbus.dlq_groups; ANALYZE pgbus.dlq_group_deltas`); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.dlq_groups`); n < 100_000 {
		t.Fatalf("pgbus.dlq_groups holds %d rows; want the 100,000 groups folded into it", n)
	}
	pages := pgtest.Int(t, s, `SELECT pg_relation_size('pgbus.dlq_groups') / current_setting('block_size')::int`)
	// A read of the group counts once, by the table or its index, touches
	// each page of the table a few times at most; the rest is the
	// catalog's, a few pages a name (more since the depths read each
	// table's size: 43 a name were seen). Once per name, the group table
	// alone would take its 1,640 pages 120 times.
	bound := int64(3*pages + 100*len(names))
	for _, c := range []struct {
		name, sql string
		args      []any
	}{
		{"depths", store.TableStatesSQL, []any{names, true}},
		{"DLQs holding messages", store.DeadHoldingSQL, []any{names}},
	} {
		var raw []byte
		if err := s.Pool().QueryRow(ctx, `EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS) `+c.sql, c.args...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var plan []struct {
			Plan analyzedNode `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("plan %s: %v", raw, err)
		}
		var scans []string
		plan[0].Plan.walk(func(n analyzedNode) {
			if (n.Relation == "dlq_groups" || n.Relation == "dlq_group_deltas") && n.Loops > 1 {
				scans = append(scans, fmt.Sprintf("%s on %s, %v loops", n.Type, n.Relation, n.Loops))
			}
		})
		if len(scans) > 0 {
			t.Errorf("%s: the statement reads the group counts once per name; want once for all %d names: %v", c.name, len(names), scans)
		}
		t.Logf("%s: %d buffers for %d names, group table of %d pages", c.name, plan[0].Plan.SharedHit+plan[0].Plan.Read, len(names), pages)
		if hit := plan[0].Plan.SharedHit + plan[0].Plan.Read; hit > bound {
			t.Errorf("%s: the statement touched %d buffers for %d names and a group table of %d pages; want at most %d", c.name, hit, len(names), pages, bound)
		}
	}
	// And the depths it reads are right.
	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{names[0]: 100_000, names[2]: 32 + 2}
	for _, d := range depths {
		if d.DLQDepth != want[d.Queue] {
			t.Errorf("queue %s: DLQ depth %d; want %d", d.Queue, d.DLQDepth, want[d.Queue])
		}
	}
}
