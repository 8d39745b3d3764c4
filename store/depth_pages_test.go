package store_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue table of fewer rows than ExactCountLimit but more pages than
// ExactCountPages, as large payloads make it, is estimated as a table of
// too many rows is: the depth read touches a few pages of its indexes, not
// every page of the table, which counting read at each scrape (320 MB for
// a million messages of 350 bytes, more than a second a read). A small
// queue beside it is still counted.
func TestDepthOfTableOfManyPagesIsEstimated(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	big, small := newQueue(t, s), newQueue(t, s)
	// Payloads of 1,500 bytes: five rows a page, stored in the table
	// itself (a row under 2 kB is neither compressed nor moved out).
	rows := store.ExactCountPages * 6
	exec(t, s, fmt.Sprintf(`INSERT INTO pgmq.q_%s (vt, message) SELECT now() - interval '1 minute', jsonb_build_object('p', repeat('x', 1500))
		FROM generate_series(1, %d); ANALYZE pgmq.q_%s`, big, rows, big))
	if _, err := s.SendBatch(ctx, small, msgs(3)); err != nil {
		t.Fatal(err)
	}
	pgtest.SettleRowStats(t, s, "pgmq.q_"+big, "pgmq.q_"+small)
	pages := pgtest.Int(t, s, `SELECT pg_relation_size('pgmq.q_`+big+`') / current_setting('block_size')::int`)
	if pages <= store.ExactCountPages || int64(rows) > store.ExactCountLimit {
		t.Fatalf("the table holds %d rows in %d pages; want more than %d pages and at most %d rows", rows, pages, store.ExactCountPages, store.ExactCountLimit)
	}

	sql, args, err := store.DepthReadSQL(ctx, s, big)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := s.Pool().QueryRow(ctx, `EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS) `+sql, args...).Scan(&raw); err != nil {
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
		if n.Type == "Seq Scan" && n.Relation == "q_"+big {
			scans = append(scans, fmt.Sprintf("%s on %s, %d buffers", n.Type, n.Relation, n.SharedHit+n.Read))
		}
	})
	if len(scans) > 0 {
		t.Errorf("the depth read scans the table of %d pages: %v", pages, scans)
	}
	if hit := plan[0].Plan.SharedHit + plan[0].Plan.Read; hit > int64(pages)/10 {
		t.Errorf("the depth read touched %d buffers of a table of %d pages; want at most %d", hit, pages, int64(pages)/10)
	}

	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range depths {
		switch d.Queue {
		case big:
			seen++
			if !d.Estimated || d.Visible != int64(rows) || d.InFlight != 0 || d.OldestAgeSeconds <= 0 {
				t.Errorf("depth of the table of %d pages = %+v; want %d visible, estimated", pages, d, rows)
			}
		case small:
			seen++
			if d.Estimated || d.Visible != 3 {
				t.Errorf("depth of the small queue = %+v; want 3 visible, counted", d)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("depths %+v; want queues %s and %s", depths, big, small)
	}
}
