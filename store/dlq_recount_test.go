package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Group counts that do not add up to a DLQ's rows (a restore that loaded
// the rows after the triggers counted each twice) are rebuilt from the
// rows, and that DLQ alone is reported; counts that add up are left.
func TestRecountDLQsRebuildsCountsThatDoNotAddUp(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := openStore(t, url)
	ctx := testContext(t)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	right, wrong := newQueue(t, s), newQueue(t, s)
	pgtest.DeadLetterN(t, s, right, 2, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	pgtest.DeadLetterN(t, s, wrong, 3, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	// As a restore's second load does: every row counted again.
	pgtest.Exec(t, url, `INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
		SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count FROM pgbus.dlq_groups WHERE dlq = '`+wrong+`_dlq'
		UNION ALL
		SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta FROM pgbus.dlq_group_deltas WHERE dlq = '`+wrong+`_dlq'`)
	depth := func(q string) int64 {
		stats, err := s.QueueStats(ctx, q, store.QueueStatsOptions{})
		if err != nil || len(stats) != 1 {
			t.Fatalf("stats of %s: %+v, %v", q, stats, err)
		}
		return stats[0].DLQDepth
	}
	if d := depth(wrong); d != 6 {
		t.Fatalf("the doubled DLQ's depth before the recount: %d, want 6", d)
	}
	got, err := s.RecountDLQs(ctx)
	if err != nil || len(got) != 1 || got[0] != (store.DLQRecount{DLQ: wrong + "_dlq", Counted: 6, Rows: 3}) {
		t.Fatalf("RecountDLQs = %+v, %v; want %s_dlq alone, counted 6 with 3 rows", got, err, wrong)
	}
	if d, r := depth(wrong), depth(right); d != 3 || r != 2 {
		t.Fatalf("depths after the recount: %d and %d, want 3 and 2", d, r)
	}
	sum, err := s.SummarizeDead(ctx, store.DeadFilter{Queue: wrong})
	if err != nil || len(sum) != 1 || sum[0].Count != 3 {
		t.Fatalf("the summary after the recount: %+v, %v; want one group of 3", sum, err)
	}
	if again, err := s.RecountDLQs(ctx); err != nil || len(again) != 0 {
		t.Fatalf("a second recount = %+v, %v; want nothing to do", again, err)
	}
}
