package ops_test

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-29T20:00:00Z":      time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC),
		"2026-11-29T22:00:00+02:00": time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC),
		"2026-11-29T20:00:00.5Z":    time.Date(2026, 11, 29, 20, 0, 0, 5e8, time.UTC),
		"2026-11-29":                time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		" 2026-11-29 ":              time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		"30m":                       now.Add(-30 * time.Minute),
		"2h":                        now.Add(-2 * time.Hour),
		"2h30m":                     now.Add(-150 * time.Minute),
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"0d":                        now,
		"20000d":                    now.Add(-20000 * 24 * time.Hour),
		"1970-01-01":                time.Unix(0, 0).UTC(),
		"2027-11-29":                time.Date(2027, 11, 29, 0, 0, 0, 0, time.UTC),
	} {
		got, err := ops.ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "now", "2026-13-01", "2026-11-31", "2026/11/29", "29.11.2026", "-5m", "-1d",
		"7 days", "1w", "5", "1.5d", "7D", "36500d", "876000h", "36501d",
		"0001-01-01T00:00:00Z", "0001-01-01", "1969-12-31T23:59:59Z", "2100-01-01", "2027-12-01T00:00:00Z", "9223372036854775807d", "876001h", "2026-11-29 20:00", "30m ago"} {
		if got, err := ops.ParseTime(in, now); err == nil {
			t.Errorf("ParseTime(%q) = %v; want an error", in, got)
		}
	}
	// An age out of range says what range, not only the grammar: the
	// longest age that stays after 1970, which then reads.
	for in, want := range map[string]string{"99999d": "give at most 20787d", "876001h": "give at most 20787d", "36500d": "give at most 20787d",
		"36501d": "give at most 20787d", "20788d": "give at most 20787d", "yesterday": "an age such as 30m"} {
		if _, err := ops.ParseTime(in, now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTime(%q): %v; want an error saying %q", in, err, want)
		}
	}
	if _, err := ops.ParseTime("20787d", now); err != nil {
		t.Errorf("ParseTime of the age the errors advise: %v", err)
	}
}

// The spellings RFC 3339 allows besides the usual one are read as it:
// a lower-case t and z, and a space between date and time (its §5.6
// note), as the pgbus_deadline header takes them.
func TestParseTimeTakesRFC3339sOtherSpellings(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-07t02:13:00z":          time.Date(2026, 11, 7, 2, 13, 0, 0, time.UTC),
		"2026-10-25 02:30:00Z":          time.Date(2026, 10, 25, 2, 30, 0, 0, time.UTC),
		"2026-10-25 04:30:00.25+02:00":  time.Date(2026, 10, 25, 2, 30, 0, 25e7, time.UTC),
		" 2026-10-25t02:30:00.000001z ": time.Date(2026, 10, 25, 2, 30, 0, 1000, time.UTC),
	} {
		got, err := ops.ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"2026-10-25  02:30:00Z", "2026-10-25 02:30", "2026-10-25x02:30:00Z", "2026-10-25T02:30:00", "2026-10-25 t02:30:00Z"} {
		if got, err := ops.ParseTime(in, now); err == nil {
			t.Errorf("ParseTime(%q) = %v; want an error", in, got)
		}
	}
}

// Since and Until take the same grammar in every operation with a filter,
// and text that is none of it is refused before anything moves.
func TestDeadFilterTimes(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	now := time.Now().UTC().Truncate(time.Second)
	svc := newService(t, s, ops.Options{Now: func() time.Time { return now }})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{Kind: "k"})
	at := []time.Time{
		time.Date(2020, 1, 14, 12, 0, 0, 0, time.UTC),
		time.Date(2020, 1, 15, 12, 0, 0, 0, time.UTC),
		now.Add(-3 * 24 * time.Hour),
		now.Add(-90 * time.Minute),
		now.Add(-10 * time.Minute),
	}
	for i, id := range ids {
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`_dlq" SET enqueued_at = $2 WHERE msg_id = $1`, id, at[i]); err != nil {
			t.Fatal(err)
		}
	}
	selected := func(since, until string) []int64 {
		t.Helper()
		f := ops.DeadFilter{Queue: q, Since: since, Until: until}
		page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: 100})
		if err != nil {
			t.Fatalf("list since %q until %q: %v", since, until, err)
		}
		var out []int64
		for _, it := range page.Items {
			out = append(out, it.MsgID)
		}
		slices.Sort(out)
		sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: f})
		if err != nil || sum.Total != int64(len(out)) {
			t.Fatalf("summary since %q until %q = %d, %v; the list has %d", since, until, sum.Total, err, len(out))
		}
		return out
	}
	for _, c := range []struct {
		since, until string
		want         []int64
	}{
		{"2020-01-15", "", ids[1:]},
		{"", "2020-01-15", ids[:1]},
		{"2020-01-15T00:00:00Z", "2020-01-16T00:00:00Z", ids[1:2]},
		{"2020-01-15T13:00:00+02:00", "2020-01-15T12:00:00.000001Z", ids[1:2]},
		// The store keeps microseconds: a bound a fraction of one after
		// a message's time is after it, for since as for until.
		{"2020-01-15T12:00:00.0000001Z", "2020-01-16", nil},
		{"2020-01-15", "2020-01-15T12:00:00.000000001Z", ids[1:2]},
		{"7d", "", ids[2:]},
		{"2h", "", ids[3:]},
		{"30m", "", ids[4:]},
		{"", "30m", ids[:4]},
		{"2h", "30m", ids[3:4]},
		{"2020-01-01", "7d", ids[:2]},
	} {
		if got := selected(c.since, c.until); !slices.Equal(got, c.want) {
			t.Errorf("since %q until %q selects %v, want %v", c.since, c.until, got, c.want)
		}
	}
	// Bulk operations take the same grammar: a dry run over the last 2h.
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q, Since: "2h"}, DryRun: true})
	if err != nil || r.Retried != 2 {
		t.Fatalf("dry-run retry since 2h = %+v, %v; want 2", r, err)
	}

	bad := []string{"yesterday", "2020-13-01", "-5m", "7 days", "1w", "last week"}
	for _, text := range bad {
		for _, f := range []ops.DeadFilter{{Queue: q, Since: text}, {Queue: q, Until: text}} {
			field := "since"
			if f.Until != "" {
				field = "until"
			}
			calls := map[string]func() error{
				"list":    func() error { _, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f}); return err },
				"summary": func() error { _, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: f}); return err },
				"retry":   func() error { _, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f}); return err },
				"discard": func() error { _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f}); return err },
				"check":   f.Check,
			}
			for name, call := range calls {
				err := call()
				if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "RFC 3339") {
					t.Errorf("%s with %s %q = %v; want ErrInvalid naming %s and the grammar", name, field, text, err, field)
				}
			}
		}
	}
	for label, f := range map[string]ops.DeadFilter{
		"until before since":   {Queue: q, Since: "2h", Until: "7d"},
		"until equal to since": {Queue: q, Since: "2020-01-15", Until: "2020-01-15T00:00:00Z"},
		"unknown reason":       {Queue: q, Reason: "bored"},
		"bad queue":            {Queue: "Q; DROP"},
	} {
		if _, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f}); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("list with %s = %v, want ErrInvalid", label, err)
		}
	}
	if n := pgtest.Live(t, s, q+"_dlq"); n != 5 || pgtest.Live(t, s, q) != 0 || pgtest.Archived(t, s, q+"_dlq") != 0 {
		t.Fatalf("refused requests moved messages: the DLQ holds %d of 5", n)
	}
}

// A cursor of a list filtered by an age pins the clock of its first page:
// page 2 of "since 1h" selects the same messages even when the clock has
// moved on so far that a fresh "since 1h" selects none.
func TestListCursorPinsTheClockOfAges(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixMicro())
	svc := newService(t, s, ops.Options{Now: func() time.Time { return time.UnixMicro(clock.Load()) }})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{Kind: "k"})
	old := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k"})
	for _, id := range old {
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`_dlq" SET enqueued_at = now() - interval '2 hours' WHERE msg_id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	f := ops.DeadFilter{Queue: q, Since: "1h"}
	page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", page, err)
	}
	seen := map[int64]bool{}
	for _, it := range page.Items {
		seen[it.MsgID] = true
	}
	clock.Add((3 * time.Hour).Microseconds())
	if fresh, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Limit: 2}); err != nil || len(fresh.Items) != 0 {
		t.Fatalf("a fresh list 3 hours later = %+v, %v; want nothing (the clock moved)", fresh, err)
	}
	pages := 1
	for page.NextCursor != "" {
		if page, err = svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Cursor: page.NextCursor, Limit: 2}); err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, it := range page.Items {
			if seen[it.MsgID] {
				t.Fatalf("message %d listed twice", it.MsgID)
			}
			seen[it.MsgID] = true
		}
	}
	if pages != 3 || len(seen) != 5 {
		t.Fatalf("%d pages held %d messages; want 3 pages and the 5 of the last hour", pages, len(seen))
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("message %d of the last hour was not listed", id)
		}
	}
	// Without an age the cursor pins nothing, and a cursor whose clock was
	// tampered with is refused.
	abs, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 2})
	if err != nil || abs.NextCursor == "" || strings.Contains(abs.NextCursor, "~") {
		t.Fatalf("list without an age: cursor %q, %v", abs.NextCursor, err)
	}
	for _, c := range []string{abs.NextCursor + "~!!", abs.NextCursor + "~-5", "~"} {
		if _, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: f, Cursor: c, Limit: 2}); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("cursor %q = %v, want ErrInvalid", c, err)
		}
	}
}

// Every kind a send takes (up to 255 bytes) can be filtered on: a filter
// bounded shorter made every link to such a kind's dead messages fail,
// with advice to pass a part of a kind, which is matched whole.
func TestFilterOnTheLongestKind(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	kind := strings.Repeat("W", ops.MaxKindBytes-4) + "<b>x"
	pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: kind, Class: "E", Message: "boom"})
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Kind: kind}})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list by a kind of %d bytes: %+v, %v; want its message", len(kind), list, err)
	}
	_, err = svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Kind: kind + "W"}})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "matched whole") {
		t.Fatalf("list by a kind longer than any: %v; want invalid, saying kinds are matched whole", err)
	}
}

// The step after a dry run filtered by an age repeats it with the instant
// the age stood for: followed hours later, it moves the dry run's set,
// where the age, counted from then, selected none and the guard refused
// the call as a change no one made. So does a discard's.
func TestDryRunStepPinsTheClockOfAges(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixMicro())
	svc := newService(t, s, ops.Options{Now: func() time.Time { return time.UnixMicro(clock.Load()) }})
	retryQ, discardQ := newQueue(t, s, nil), newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, retryQ, 2, pgtest.DeadSpec{Kind: "k"})
	pgtest.DeadLetterN(t, s, discardQ, 2, pgtest.DeadSpec{Kind: "k"})
	filterOf := func(h ops.Hint) ops.DeadFilter {
		since, _ := h.Args["since"].(string)
		if _, err := time.Parse(time.RFC3339Nano, since); err != nil {
			t.Fatalf("the step's since = %q; want the instant the age stood for", since)
		}
		return ops.DeadFilter{Queue: h.Args["queue"].(string), Since: since}
	}

	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: retryQ, Since: "1h"}, DryRun: true})
	if err != nil || dry.Retried != 2 {
		t.Fatalf("retry dry run = %+v, %v", dry, err)
	}
	step := findHint(t, dry.Next, ops.OpDLQRetry)
	clock.Add((3 * time.Hour).Microseconds())
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: filterOf(step), Expect: step.Args["expect"].(string)}); err != nil || r.Retried != 2 {
		t.Errorf("the dry run's step, 3 hours later = %+v, %v; want its 2 messages retried", r, err)
	}

	clock.Store(time.Now().UnixMicro())
	ddry, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: discardQ, Since: "1h"}, DryRun: true})
	if err != nil || ddry.Discarded != 2 {
		t.Fatalf("discard dry run = %+v, %v", ddry, err)
	}
	dstep := findHint(t, ddry.Next, ops.OpDLQDiscard)
	clock.Add((3 * time.Hour).Microseconds())
	if r, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: filterOf(dstep), Expect: dstep.Args["expect"].(string), Confirm: true}); err != nil || r.Discarded != 2 {
		t.Errorf("the discard dry run's step, 3 hours later = %+v, %v; want its 2 messages discarded", r, err)
	}
}

// An age too long, or negative, says so and what the range is, where it
// read as no age at all; a duration past Go's range is too long as well.
func TestParseAgeSaysItsRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"9999999999h":           "is too long: give at most 36500d (100 years)",
		"36501d":                "is too long: give at most 36500d (100 years)",
		"99999999999999999999d": "is too long: give at most 36500d (100 years)",
		"876001h":               "is too long: give at most 36500d (100 years)",
		"-3d":                   "is negative",
		"-5m":                   "is negative",
		"5x":                    "is not an age",
	} {
		if _, err := ops.ParseAge(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAge(%q) = %v; want %q", in, err, want)
		}
	}
	if got := ops.FormatAge(8760 * time.Hour); got != "365d" {
		t.Errorf("FormatAge(8760h) = %q, want 365d", got)
	}
}

// A kind filter copied from a view that redacted it is refused saying to
// filter by group, where it matched nothing without a word.
func TestKindFilterWithTheRedactionMarkerIsRefused(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	shown := "sync password=" + ops.Redacted
	_, listErr := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Kind: shown}})
	_, retryErr := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q, Kind: shown}, DryRun: true})
	_, runErr := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, Kind: shown})
	for what, err := range map[string]error{"list": listErr, "retry": retryErr, "run-now": runErr} {
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "filter by its group") || !hasHint(ops.NextSteps(err), ops.OpDLQSummary, map[string]any{"queue": q}) {
			t.Errorf("%s by kind %q: %v; want it refused, saying to filter by group", what, shown, err)
		}
	}
}
