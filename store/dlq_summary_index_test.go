package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// fillDead inserts n dead messages into dlq as a worker of source would
// have left them, over the n*37 minutes before at: blocks with and without
// a reason, kinds from the header or the payload's job_class, error
// messages that normalize alike and apart, classes spread over classes
// values, and some messages that came back from the DLQ before.
func fillDead(tb testing.TB, s *store.Store, dlq, source string, n, classes int, at time.Time) {
	tb.Helper()
	_, err := s.Pool().Exec(context.Background(), `
		INSERT INTO pgmq."q_`+dlq+`" (vt, enqueued_at, message, headers)
		SELECT now(), $3::timestamptz - g * interval '37 minutes',
		       CASE WHEN g % 5 = 0 THEN jsonb_build_object('job_class', 'Job' || (g % 3), 'n', g, 'tenant', 't' || (g % 4))
		            ELSE jsonb_build_object('n', g, 'tenant', 't' || (g % 4)) END,
		       jsonb_strip_nulls(jsonb_build_object(
		           'pgbus_kind', CASE WHEN g % 5 <> 0 THEN 'kind' || (g % 4) END,
		           'pgbus_dead_letter', jsonb_build_object(
		               'reason', CASE g % 4 WHEN 0 THEN 'max_retries_exceeded' WHEN 1 THEN 'non_retryable_error' WHEN 2 THEN 'deadline_exceeded' END,
		               'source_queue', $2::text,
		               'error_class', 'E' || (g % $4::int),
		               'error_message', CASE g % 3 WHEN 0 THEN 'timeout after ' || g || 'ms'
		                                           WHEN 1 THEN 'order ' || md5(g::text) || ' declined'
		                                           ELSE 'connection refused by "host-' || g || '"' END,
		               'retries_from_dlq', CASE WHEN g % 11 = 0 THEN g % 3 END)))
		FROM generate_series(1, $1::int) g`, n, source, at, classes)
	if err != nil {
		tb.Fatalf("fill %s: %v", dlq, err)
	}
}

// A summary filtered by time, text or group reads the groups of each DLQ
// through its index on the group (pgbus.dlq_cause_key) rather than every
// message, which normalized each message's error again and, on 300,000
// dead messages, took most of the database call's time. It gives what
// reading every message gives: the same groups and totals, counts,
// times, samples, newest error, reasons, returns from the DLQ and
// breakdowns, over several DLQs, messages without a block, messages
// whose group changed, messages written past the triggers that count
// groups, and the DLQ of a queue dropped since. A DLQ whose triggers are
// off is still read message by message.
func TestDeadSummaryByTimeOrTextReadsTheGroupIndex(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it summarizes every DLQ
	ctx := testContext(t)
	at := time.Now().Truncate(time.Second)
	qs := []string{newQueue(t, s), newQueue(t, s), newQueue(t, s)}
	dlqs := make([]string, len(qs))
	for i, q := range qs {
		dlqs[i] = store.DLQName(q)
	}
	fillDead(t, s, dlqs[0], qs[0], 1500, 600, at) // over 500 groups
	fillDead(t, s, dlqs[1], qs[1], 700, 7, at.Add(-time.Hour))
	fillDead(t, s, dlqs[2], qs[2], 300, 5, at.Add(-2*time.Hour))
	deadN(t, s, qs[0], 4, "charge", "Declined", store.ReasonMaxRetriesExceeded)
	deadN(t, s, qs[1], 3, "email", "", store.ReasonDeadlineExceeded)
	// Rows other clients may write into a DLQ.
	dlSendRaw(t, s, dlqs[0], `{"plain":1}`, "")
	dlSendRaw(t, s, dlqs[0], `{"job_class":"RubyJob"}`, `{"x-pgmq-group":"g"}`)
	dlSendRaw(t, s, dlqs[1], `"scalar"`, `{"pgbus_dead_letter": "not an object", "pgbus_kind": "kind1"}`)
	// Messages whose group changed.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+dlqs[1]+`"
		SET headers = jsonb_set(headers, '{pgbus_dead_letter,error_class}', '"Changed"') WHERE msg_id % 7 = 0 AND jsonb_typeof(headers->'pgbus_dead_letter') = 'object'`); err != nil {
		t.Fatal(err)
	}
	// Messages written past the triggers: no group counts them.
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+dlqs[1]+`" DISABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	fillDead(t, s, dlqs[1], "elsewhere", 40, 3, at.Add(-90*time.Minute))
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+dlqs[1]+`" ENABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	// The DLQ of a queue dropped since.
	if _, err := s.Pool().Exec(ctx, `DROP TABLE pgmq."q_`+qs[2]+`", pgmq."a_`+qs[2]+`"; DELETE FROM pgmq.meta WHERE queue_name = '`+qs[2]+`'`); err != nil {
		t.Fatal(err)
	}

	full := summaryOf(t, s, store.DeadFilter{Queue: dlqs[0]})
	group := full.Groups[0].Group
	day := func(n int) time.Time { return at.Add(-time.Duration(n) * 24 * time.Hour) }
	filters := []store.DeadFilter{
		{},
		{Kind: "kind1"},
		{Since: epoch},
		{Since: day(10)},
		{Until: day(12)},
		{Since: day(20), Until: day(5)},
		{Since: at.Add(time.Hour)}, // none
		{Text: "timeout"},
		{Text: "DECLINED", Since: day(15)},
		{Text: `"host-`},
		{Text: "no message says this"},
		{Queue: qs[0], Since: day(9)},
		{Queue: dlqs[1], Until: day(3)},
		{Queue: dlqs[2], Since: epoch},
		{Kind: "kind1", Since: day(30)},
		{Kind: "Job2", Text: "order"},
		{ErrorClass: "Changed", Since: epoch},
		{Reason: store.ReasonNotRecorded, Since: epoch},
		{Reason: store.ReasonMaxRetriesExceeded, Until: day(10)},
		{Group: group},
		{Group: group, Since: day(10)},
	}
	for _, f := range filters {
		for _, o := range []store.SummaryOptions{{}, {ByField: []string{"tenant"}}} {
			name := fmt.Sprintf("%+v by %v", f, o.ByField)
			scanned, got := summaryScanned(t, s, f, o)
			if len(scanned) != 0 {
				t.Errorf("%s: read message by message: %v; want every DLQ read through its group index", name, scanned)
			}
			if f.Since.IsZero() && f.Until.IsZero() && f.Text == "" && f.Group == "" {
				continue // read from the counts, which miss what was written past the triggers
			}
			want := summaryByScan(t, s, f, o)
			compareSummaries(t, name, got, want)
		}
	}
	if got := summaryOf(t, s, store.DeadFilter{Since: epoch}); !got.Truncated || got.TotalGroups <= store.MaxDeadGroups {
		t.Fatalf("summary of every DLQ: %d of %d groups, truncated %v; want over %d groups", len(got.Groups), got.TotalGroups, got.Truncated, store.MaxDeadGroups)
	}

	// Triggers off: the DLQ's counts may miss what is written meanwhile,
	// so it is read message by message, and agrees all the same.
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+dlqs[1]+`" DISABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	f := store.DeadFilter{Since: day(10)}
	for _, o := range []store.SummaryOptions{{}, {ByField: []string{"tenant"}}} {
		scanned, got := summaryScanned(t, s, f, o)
		if len(scanned) == 0 || slices.ContainsFunc(scanned, func(d string) bool { return d != dlqs[1] }) {
			t.Fatalf("read message by message with the triggers of %s off, by %v: %v; want that DLQ alone", dlqs[1], o.ByField, scanned)
		}
		compareSummaries(t, fmt.Sprintf("triggers off, by %v", o.ByField), got, summaryByScan(t, s, f, o))
	}
}

// summaryScanned returns the summary of f and the DLQs it read message by
// message, reading through the group index wherever it can.
func summaryScanned(t testing.TB, s *store.Store, f store.DeadFilter, o store.SummaryOptions) ([]string, store.DeadSummary) {
	t.Helper()
	ctx, scanned := store.ObserveSummaryScans(testContext(t), true)
	sum, err := s.SummarizeDeadWith(ctx, f, o)
	if err != nil {
		t.Fatalf("summary %+v: %v", f, err)
	}
	return scanned(), sum
}

// summaryByScan returns the summary of f read from every message, as
// before the index was read.
func summaryByScan(t testing.TB, s *store.Store, f store.DeadFilter, o store.SummaryOptions) store.DeadSummary {
	t.Helper()
	sum, err := s.SummarizeDeadWith(store.ForceSummaryScan(testContext(t)), f, o)
	if err != nil {
		t.Fatalf("summary %+v read from every message: %v", f, err)
	}
	return sum
}

func compareSummaries(t testing.TB, name string, got, want store.DeadSummary) {
	t.Helper()
	same := sameGroups(got.Groups, want.Groups) && slices.EqualFunc(got.Groups, want.Groups, func(x, y store.DeadGroup) bool {
		return x.Group == y.Group && fmt.Sprint(x.ByField) == fmt.Sprint(y.ByField)
	})
	if !same || got.TotalGroups != want.TotalGroups || got.TotalMessages != want.TotalMessages || got.Truncated != want.Truncated {
		t.Errorf("%s: summary through the index: %d groups of %d, %d messages, truncated %v:%s\nread from every message: %d groups of %d, %d messages, truncated %v:%s",
			name, len(got.Groups), got.TotalGroups, got.TotalMessages, got.Truncated, dumpSome(got.Groups),
			len(want.Groups), want.TotalGroups, want.TotalMessages, want.Truncated, dumpSome(want.Groups))
	}
}

// dumpSome dumps the first groups, and where the two lists differ is
// mostly there or in their lengths.
func dumpSome(gs []store.DeadGroup) string {
	return dumpGroups(gs[:min(len(gs), 8)])
}

// BenchmarkDeadSummaryFiltered compares a summary filtered by time or
// text, and one broken down by a payload field, read from every message
// (scan) with one read through each DLQ's index on the group key (index),
// on 5 DLQs of 1,000 dead messages each, under a lock bound as the
// operations layer reads them.
func BenchmarkDeadSummaryFiltered(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	at := time.Now().Truncate(time.Second)
	for i := range 5 {
		q := newQueue(b, s)
		fillDead(b, s, store.DLQName(q), q, 1000, 40, at.Add(-time.Duration(i)*time.Minute))
	}
	if _, err := s.Pool().Exec(context.Background(), `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	filters := []struct {
		name string
		f    store.DeadFilter
		o    store.SummaryOptions
	}{
		{"since", store.DeadFilter{Since: at.Add(-20 * 24 * time.Hour)}, store.SummaryOptions{}},
		{"text", store.DeadFilter{Text: "timeout"}, store.SummaryOptions{}},
		{"since_by_field", store.DeadFilter{Since: at.Add(-20 * 24 * time.Hour)}, store.SummaryOptions{ByField: []string{"tenant"}}},
	}
	for _, f := range filters {
		for _, way := range []string{"scan", "index"} {
			b.Run(f.name+"/"+way, func(b *testing.B) {
				ctx := store.WithLockWait(context.Background(), 3*time.Second)
				if way == "scan" {
					ctx = store.ForceSummaryScan(ctx)
				}
				var groups int
				for b.Loop() {
					sum, err := s.SummarizeDeadWith(ctx, f.f, f.o)
					if err != nil {
						b.Fatal(err)
					}
					groups = sum.TotalGroups
				}
				if groups == 0 {
					b.Fatal("no group selected")
				}
			})
		}
	}
}

// A summary reads a DLQ through its group index only where that costs
// less than reading the messages selected: a small window of time on a
// DLQ of many groups ("what died in the last hour") reads the window's
// few messages, where probing every group of the DLQ took hundreds of
// times longer; a DLQ whose few groups hold many messages of the window
// is read through the index. Either way the summary is that of reading
// every message.
func TestDeadSummaryReadsTheIndexOnlyWhereItPays(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it summarizes every DLQ
	at := time.Now().Truncate(time.Second)
	many, few := newQueue(t, s), newQueue(t, s)
	fillDead(t, s, store.DLQName(many), many, 400, 7, at) // many groups, one message each 37 minutes
	if _, err := s.Pool().Exec(testContext(t), `
		INSERT INTO pgmq."q_`+store.DLQName(few)+`" (vt, enqueued_at, message, headers)
		SELECT now(), $1::timestamptz - g * interval '1 minute', '{}',
		       jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter', jsonb_build_object(
		           'reason', 'max_retries_exceeded', 'source_queue', $2::text, 'error_class', 'E', 'error_message', 'refused'))
		FROM generate_series(1, 200) g`, at, few); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		f        store.DeadFilter
		scanMany bool // else as it pays: one message a group, 400, reads message by message
	}{
		{"the last hour", store.DeadFilter{Since: at.Add(-time.Hour)}, true},
		{"a year", store.DeadFilter{Since: at.Add(-365 * 24 * time.Hour)}, false},
	} {
		ctx, scanned := store.ObserveSummaryScans(testContext(t), false)
		got, err := s.SummarizeDeadWith(ctx, c.f, store.SummaryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		read := scanned()
		if (c.scanMany && !slices.Contains(read, store.DLQName(many))) || slices.Contains(read, store.DLQName(few)) {
			t.Errorf("%s: read message by message %v; want %s read so (%v), and %s through its index", c.name, read, store.DLQName(many), c.scanMany, store.DLQName(few))
		}
		if want := summaryByScan(t, s, c.f, store.SummaryOptions{}); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: summary\n%+v\nwant, as read from every message,\n%+v", c.name, got, want)
		}
	}
}
