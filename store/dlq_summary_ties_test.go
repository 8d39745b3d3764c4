package store_test

import (
	"context"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// fillTies inserts into dlq one message for each of ones error classes,
// two for each of twos classes and three for each of threes, with few
// distinct times, so that many groups tie on size and last time and only
// the DLQ and the key part them. Every other message was dead-lettered
// for exceeding its retries, the others for a non-retryable error.
func fillTies(tb testing.TB, s *store.Store, dlq, source string, ones, twos, threes int) {
	tb.Helper()
	_, err := s.Pool().Exec(context.Background(), `
		INSERT INTO pgmq."q_`+dlq+`" (vt, enqueued_at, message, headers)
		SELECT now(), now() - (g % 97) * interval '1 millisecond', '{}',
		       jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter', jsonb_build_object(
		           'reason', CASE WHEN g % 2 = 0 THEN 'max_retries_exceeded' ELSE 'non_retryable_error' END,
		           'source_queue', $1::text, 'error_class', 'C' || c, 'error_message', 'failed ' || g,
		           'retries_from_dlq', g % 3))
		FROM (SELECT g, g AS c FROM generate_series(1, $2::int) g
		      UNION ALL SELECT g, $2 + (g % $3) FROM generate_series(1, 2 * $3::int) g
		      UNION ALL SELECT g, $2 + $3 + (g % $4) FROM generate_series(1, 3 * $4::int) g) m`, source, ones, twos, threes)
	if err != nil {
		tb.Fatalf("fill %s: %v", dlq, err)
	}
}

// A summary of a long tail of groups as small as the last one a page
// holds (one message each, error classes that vary) probes the first
// time, samples and newest message of the groups it lists only, not of
// every group tied with the last: 2,000 such groups were all probed on
// every page, seconds on 20,000 of them. Each page, after each cursor,
// is still the one reading every message gives, totals included, over
// one DLQ and two, with a reason and without.
func TestDeadSummaryProbesOnlyTheGroupsItLists(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it summarizes every DLQ
	ctx := testContext(t)
	q1, q2 := newQueue(t, s), newQueue(t, s)
	fillTies(t, s, store.DLQName(q1), q1, 2000, 30, 5)
	fillTies(t, s, store.DLQName(q2), q2, 700, 300, 0)
	for _, f := range []store.DeadFilter{
		{Queue: q1},
		{},
		{Queue: q1, Reason: "max_retries_exceeded"},
	} {
		cursor := ""
		for page := 0; ; page++ {
			if page > 20 {
				t.Fatalf("%+v: paging does not end", f)
			}
			pctx, probed := store.ObserveSummaryProbes(ctx)
			o := store.SummaryOptions{Cursor: cursor}
			got, err := s.SummarizeDeadWith(pctx, f, o)
			if err != nil {
				t.Fatalf("%+v: page %d: %v", f, page, err)
			}
			if n := probed(); n > store.MaxDeadGroups {
				t.Errorf("%+v: page %d probed %d groups in full; want at most the %d a page lists", f, page, n, store.MaxDeadGroups)
			}
			want := summaryByScan(t, s, f, o)
			compareSummaries(t, "page", got, want)
			if got.AfterGroups != want.AfterGroups || got.AfterMessages != want.AfterMessages {
				t.Errorf("%+v: page %d: %d groups and %d messages after the cursor; reading every message: %d and %d",
					f, page, got.AfterGroups, got.AfterMessages, want.AfterGroups, want.AfterMessages)
			}
			if t.Failed() {
				t.Fatalf("%+v: page %d differs", f, page)
			}
			if !got.Truncated {
				if page < 1 {
					t.Fatalf("%+v: one page of %d groups; want several", f, got.TotalGroups)
				}
				break
			}
			if cursor, err = s.DeadGroupCursor(ctx, f, got.Groups[len(got.Groups)-1]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkSummaryManyTies summarizes a DLQ of 15,000 groups of one
// message each, all tied with the last group of a page: the first page,
// and the page after it.
func BenchmarkSummaryManyTies(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := context.Background()
	q := newQueue(b, s)
	fillTies(b, s, store.DLQName(q), q, 15000, 0, 0)
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	f := store.DeadFilter{Queue: q}
	first, err := s.SummarizeDeadReport(ctx, f)
	if err != nil {
		b.Fatal(err)
	}
	cursor, err := s.DeadGroupCursor(ctx, f, first.Groups[len(first.Groups)-1])
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, cursor string }{{"first", ""}, {"after", cursor}} {
		b.Run(p.name, func(b *testing.B) {
			var listed int
			for b.Loop() {
				sum, err := s.SummarizeDeadWith(ctx, f, store.SummaryOptions{Cursor: p.cursor})
				if err != nil {
					b.Fatal(err)
				}
				listed = len(sum.Groups)
			}
			if listed != store.MaxDeadGroups {
				b.Fatalf("%d groups listed; want %d", listed, store.MaxDeadGroups)
			}
		})
	}
}
