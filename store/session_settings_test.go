package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// textModes are the values of default_query_exec_mode with which pgx reads
// every result as text, as a pooler in transaction mode may need.
var textModes = []string{"exec", "simple_protocol"}

// wantNear fails the test unless got is within a minute of want: the
// tolerance of clocks read by two processes, far below the hours a time
// zone shifts a time by.
func wantNear(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -time.Minute || d > time.Minute {
		t.Errorf("%s = %s, want about %s (off by %s)", what, got.UTC(), want.UTC(), d)
	}
}

// A DateStyle other than ISO, set for every session of the database, does
// not break reading times in the modes that read results as text: a
// worker reads its messages, and a list shows them, at the times they
// were sent and become visible.
func TestTimesReadAsTextUnderAnotherDateStyle(t *testing.T) {
	t.Parallel()
	for _, mode := range textModes {
		t.Run(mode, func(t *testing.T) {
			url := pgtest.NewDatabaseSet(t, "DateStyle", "SQL, DMY", "TimeZone", "Pacific/Chatham")
			s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "default_query_exec_mode", mode))
			ctx, q := testContext(t), newQueue(t, s)
			sent := time.Now()
			if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{"n":1}`)}); err != nil {
				t.Fatal(err)
			}
			msgs, err := s.Read(ctx, q, time.Hour, 1)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("read %s: %d messages, %v; want the one sent", q, len(msgs), err)
			}
			wantNear(t, "enqueued_at", msgs[0].EnqueuedAt, sent)
			wantNear(t, "vt after a read with a visibility timeout of an hour", msgs[0].VisibleAt, sent.Add(time.Hour))
			page, err := s.ListLive(ctx, store.LiveFilter{Queue: q}, "", 10)
			if err != nil || len(page.Items) != 1 {
				t.Fatalf("list %s: %+v, %v; want the one message", q, page.Items, err)
			}
			wantNear(t, "listed enqueued_at", page.Items[0].EnqueuedAt, sent)
			wantNear(t, "listed visible_at", page.Items[0].VisibleAt, sent.Add(time.Hour))
		})
	}
}

// A bytea_output of escape, set for every session of the database, does
// not break the pages of a DLQ list in the modes that read results as
// text: the key that signs their cursors is read whatever the format.
func TestDeadPagesReadAsTextUnderEscapeByteaOutput(t *testing.T) {
	t.Parallel()
	for _, mode := range textModes {
		t.Run(mode, func(t *testing.T) {
			url := pgtest.NewDatabaseSet(t, "bytea_output", "escape")
			s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "default_query_exec_mode", mode))
			ctx, q := testContext(t), newQueue(t, s)
			ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Message: "boom"})
			f := store.DeadFilter{Queue: q}
			first, err := s.ListDead(ctx, f, "", 1)
			if err != nil || len(first.Items) != 1 || first.NextCursor == "" {
				t.Fatalf("first page of %s: %+v, %v; want one message and a cursor", q, first, err)
			}
			second, err := s.ListDead(ctx, f, first.NextCursor, 1)
			if err != nil || len(second.Items) != 1 || second.Items[0].MsgID == first.Items[0].MsgID {
				t.Fatalf("second page of %s: %+v, %v; want the other of %v", q, second, err, ids)
			}
		})
	}
}

// wantUTC fails the test unless at is in UTC, as the dead-letter block
// writes times: a result's JSON then writes each of its times with Z,
// rather than some in the process's zone and others in UTC.
func wantUTC(t *testing.T, what string, at time.Time) {
	t.Helper()
	if at.Location() != time.UTC {
		t.Errorf("%s = %s, in %s; want it in UTC", what, at, at.Location())
	}
}

// Times come back in UTC, whatever the zone of the server's sessions and
// of the process, in the mode that reads results in binary and in one that
// reads them as text.
func TestTimesReadInUTC(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cache_statement", "exec"} {
		t.Run(mode, func(t *testing.T) {
			url := pgtest.NewDatabaseSet(t, "TimeZone", "Asia/Kathmandu")
			s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "default_query_exec_mode", mode))
			ctx, q := testContext(t), newQueue(t, s)
			if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			msgs, err := s.Read(ctx, q, time.Hour, 1)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("read %s: %d messages, %v; want the one sent", q, len(msgs), err)
			}
			wantUTC(t, "enqueued_at of a read", msgs[0].EnqueuedAt)
			wantUTC(t, "vt of a read", msgs[0].VisibleAt)
			live, err := s.ListLive(ctx, store.LiveFilter{Queue: q}, "", 10)
			if err != nil || len(live.Items) != 1 {
				t.Fatalf("list %s: %+v, %v; want the one message", q, live.Items, err)
			}
			wantUTC(t, "listed visible_at", live.Items[0].VisibleAt)
			pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom"})
			dead, err := s.ListDead(ctx, store.DeadFilter{Queue: q}, "", 10)
			if err != nil || len(dead.Items) != 1 {
				t.Fatalf("list the DLQ of %s: %+v, %v; want one message", q, dead.Items, err)
			}
			wantUTC(t, "dead_lettered_at", dead.Items[0].DeadLetteredAt)
			groups, err := s.SummarizeDead(ctx, store.DeadFilter{Queue: q})
			if err != nil || len(groups) != 1 {
				t.Fatalf("summarize the DLQ of %s: %+v, %v; want one group", q, groups, err)
			}
			wantUTC(t, "first_dead_lettered_at", groups[0].FirstDeadAt)
			wantUTC(t, "last_dead_lettered_at, of an array", groups[0].LastDeadAt)
		})
	}
}

// A DLQ summary works in the modes that read results as text, which do
// not ask the server for the types of parameters either.
func TestDeadSummaryInTextModes(t *testing.T) {
	t.Parallel()
	for _, mode := range textModes {
		t.Run(mode, func(t *testing.T) {
			s := pgtest.OpenStore(t, pgtest.WithParam(t, pgtest.NewDatabase(t), "default_query_exec_mode", mode))
			ctx, q := testContext(t), newQueue(t, s)
			ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Kind: "k", Message: "boom"})
			groups, err := s.SummarizeDead(ctx, store.DeadFilter{Queue: q})
			if err != nil || len(groups) != 1 || groups[0].Count != 2 || len(groups[0].SampleMsgIDs) != 2 {
				t.Fatalf("summarize the DLQ of %s: %+v, %v; want one group of %v", q, groups, err, ids)
			}
			f := store.DeadFilter{Queue: q, Reason: groups[0].Reasons[0]}
			cursor, err := s.DeadGroupCursor(ctx, f, groups[0])
			if err != nil {
				t.Fatal(err)
			}
			sum, err := s.SummarizeDeadWith(ctx, f, store.SummaryOptions{Cursor: cursor})
			if err != nil || len(sum.Groups) != 0 || sum.TotalGroups != 1 || sum.AfterGroups != 0 {
				t.Fatalf("summarize the DLQ of %s by reason after its one group: %+v, %v; want none after it of 1", q, sum, err)
			}
		})
	}
}

// Throughput is read in the modes that read results as text, whose
// simple protocol writes parameters into the statement as literals of no
// type, and counted in the minutes it was counted in whatever the zone of
// the server's sessions.
func TestThroughputInTextModes(t *testing.T) {
	t.Parallel()
	for _, mode := range textModes {
		t.Run(mode, func(t *testing.T) {
			url := pgtest.NewDatabaseSet(t, "TimeZone", "Pacific/Chatham")
			s := pgtest.OpenStore(t, pgtest.WithParam(t, url, "default_query_exec_mode", mode))
			ctx, q := testContext(t), uniqueName("tp")
			pgtest.CreateQueue(t, s, q) // counters are kept for queues that exist
			first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
			err := s.AddStats(ctx, []store.StatsDelta{
				{Minute: first.Add(-time.Minute), Queue: q, Kind: "k", Succeeded: 100},
				{Minute: first.Add(3 * time.Minute), Queue: q, Kind: "k", Succeeded: 2, DeadLettered: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			series, err := s.Throughput(ctx, q, store.ThroughputSpan{First: first, Step: 2 * time.Minute, Buckets: 3})
			want := []store.Outcomes{{}, {Succeeded: 2, DeadLettered: 1}, {}}
			if err != nil || len(series) != 1 || !equalOutcomes(series[0].Buckets, want) {
				t.Fatalf("throughput of %s = %+v, %v; want %+v", q, series, err, want)
			}
		})
	}
}

// A breaker's users, which travel in JSON, come back in UTC like every
// other time, whatever the zone of the server's sessions, and seen when
// they were.
func TestBreakerUsersSeenInUTC(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabaseSet(t, "TimeZone", "Asia/Kathmandu"))
	ctx, name := testContext(t), uniqueName("br")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 3, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}
	seen := time.Now()
	if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: "orders", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListBreakers(ctx, name)
	if err != nil || len(list) != 1 || len(list[0].Users) != 1 {
		t.Fatalf("breaker %s: %+v, %v; want it with one user", name, list, err)
	}
	wantUTC(t, "a user's seen_at", list[0].Users[0].SeenAt)
	wantNear(t, "a user's seen_at", list[0].Users[0].SeenAt, seen)
	wantUTC(t, "updated_at", list[0].UpdatedAt)
}

// A deadline another client wrote with its own offset reads as the same
// instant in UTC, as every other time.
func TestDeadlineReadInUTC(t *testing.T) {
	t.Parallel()
	at, ok := store.ParseDeadline("2026-03-01T18:45:00+05:45")
	if !ok || !at.Equal(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("ParseDeadline = %s, %v; want 2026-03-01 13:00:00 UTC", at, ok)
	}
	wantUTC(t, "a deadline written at +05:45", at)
}

// A pool a program opens itself and configures with ConfigurePool reads
// as one Open opens does under a DBA's DateStyle and zone in a mode that
// reads results as text, and keeps the program's own AfterConnect.
func TestConfigurePoolOfAProgramsOwnPool(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabaseSet(t, "DateStyle", "German", "TimeZone", "Pacific/Chatham")
	cfg, err := pgxpool.ParseConfig(pgtest.WithParam(t, url, "default_query_exec_mode", "simple_protocol"))
	if err != nil {
		t.Fatal(err)
	}
	var ownRan atomic.Int64
	cfg.AfterConnect = func(context.Context, *pgx.Conn) error { ownRan.Add(1); return nil }
	store.ConfigurePool(cfg)
	ctx := testContext(t)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(pool)
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s)
	sent := time.Now()
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Hour, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("read %s: %d messages, %v; want the one sent", q, len(msgs), err)
	}
	wantNear(t, "enqueued_at", msgs[0].EnqueuedAt, sent)
	wantUTC(t, "enqueued_at", msgs[0].EnqueuedAt)
	if ownRan.Load() == 0 {
		t.Error("the program's own AfterConnect never ran: ConfigurePool dropped it")
	}
}

// In a LATIN1 database, a payload's text is stored as the characters it
// is, not as UTF-8's bytes read as LATIN1 characters, so that it reads back
// as sent, here and in another client's session; a character LATIN1 has
// no room for is refused, not stored as something else.
func TestPayloadsOfALatin1Database(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewLatin1Database(t)
	s := pgtest.OpenStore(t, dbURL)
	ctx := testContext(t)
	q := newQueue(t, s)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"v": "café \u00e9"}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 1)
	if err != nil || len(msgs) != 1 || msgs[0].ID != id {
		t.Fatalf("read %+v, %v; want message %d", msgs, err, id)
	}
	var got struct{ V string }
	if err := json.Unmarshal(msgs[0].Payload, &got); err != nil || got.V != "café é" {
		t.Fatalf("payload read back %s (%v); want café é", msgs[0].Payload, err)
	}
	var chars int
	if err := s.Pool().QueryRow(ctx, `SELECT length(message->>'v') FROM pgmq.q_`+q+` WHERE msg_id = $1`, id).Scan(&chars); err != nil || chars != 6 {
		t.Fatalf("the database holds %d characters (%v); want the 6 of café é, not UTF-8's bytes as characters", chars, err)
	}
	_, err = s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"v": "😀"}`)})
	if err == nil || !strings.Contains(err.Error(), "LATIN1") {
		t.Fatalf("send of a character LATIN1 cannot hold: %v; want it refused naming the encoding", err)
	}
}

// With standard_conforming_strings off for every session of the database,
// as an old application's DBA may leave it, pgbus's own sessions still read
// its regular expressions as written: messages are dead-lettered, grouped,
// discarded and restored.
func TestDeadLettersWithoutStandardConformingStrings(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabaseSet(t, "standard_conforming_strings", "off"))
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "charge", Message: `order 42 failed: "card \"x\" declined"`})
	groups, err := s.SummarizeDead(ctx, store.DeadFilter{Queue: q})
	if err != nil || len(groups) != 1 || !strings.Contains(groups[0].ErrorPattern, "order <n> failed") {
		t.Fatalf("summary %+v, %v; want one group whose pattern numbers <n>", groups, err)
	}
	if n, err := s.DiscardDead(ctx, store.DLQName(q), ids); err != nil || n != 1 {
		t.Fatalf("discard: %d, %v; want 1", n, err)
	}
	page, err := s.ListDiscarded(ctx, store.DLQName(q), store.DiscardedFilter{}, "", 10)
	if err != nil || len(page.Items) != 1 || page.Items[0].DeadLetteredAt.IsZero() {
		t.Fatalf("discarded %+v, %v; want the message with the time it died", page, err)
	}
}

// In a LATIN1 database, failures are written whatever their text: a long
// error message is cut in the dead-letter block (whose SQL once held an
// ellipsis LATIN1 has no room for, refusing every dead letter), and the
// characters LATIN1 cannot hold are kept as escapes, in the block, the
// history of a retry and a breaker's last error, where each write was
// refused and a worker retried the outcome for ever.
func TestFailuresOfALatin1Database(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewLatin1Database(t))
	ctx := testContext(t)
	q := newQueue(t, s)
	long := "declined: " + strings.Repeat("x", 1500)
	ids := pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Message: long},
		pgtest.DeadSpec{Message: "Zahlung abgelehnt für Müller — 🚀 …", Class: "Fehler—ü"})
	block := func(id int64) (msg, class string) {
		t.Helper()
		err := s.Pool().QueryRow(ctx, `SELECT headers->'pgbus_dead_letter'->>'error_message', headers->'pgbus_dead_letter'->>'error_class'
			FROM pgmq.`+pgx.Identifier{"q_" + store.DLQName(q)}.Sanitize()+` WHERE msg_id = $1`, id).Scan(&msg, &class)
		if err != nil {
			t.Fatal(err)
		}
		return msg, class
	}
	if msg, _ := block(ids[0]); !strings.HasSuffix(msg, "x...") || len(msg) != store.BlockErrorMessageMax+2 {
		t.Errorf("the long error's block message is %d characters ending %q; want it cut at %d with three dots", len(msg), msg[max(0, len(msg)-10):], store.BlockErrorMessageMax)
	}
	if msg, class := block(ids[1]); msg != `Zahlung abgelehnt für Müller \u2014 \U0001f680 ...` || class != `Fehler\u2014ü` {
		t.Errorf("block of the error LATIN1 cannot hold whole: message %q, class %q; want its other characters as escapes", msg, class)
	}

	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, q, time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	retried, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: id, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "🚀 " + strings.Repeat("y", store.HistoryErrorMessageMax)}}})
	if err != nil || len(retried) != 1 {
		t.Fatalf("retry with an error LATIN1 cannot hold: %v, %v; want it written", retried, err)
	}
	breaker := uniqueName("latin1")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 5, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BreakerFailed(ctx, breaker, "downstream said 🚀"); err != nil {
		t.Fatalf("a breaker's failure with an error LATIN1 cannot hold: %v", err)
	}
}

// In a SQL_ASCII database, which refuses a JSON \u escape of any character
// past ASCII, what pgbus writes as JSON is written all the same: the
// output a failure keeps (where Go's JSON escapes U+2028 and U+2029, and a
// dead letter was refused for ever, its worker retrying the write), an
// audit entry, and payloads and headers sent with escapes, which read back
// as the characters they escape.
func TestJSONOfASQLASCIIDatabase(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewSQLASCIIDatabase(t))
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{
		{Payload: json.RawMessage(`{"v": "\u20ac \ud83d\ude00 \u00e9 \\u00e9"}`), Headers: json.RawMessage(`{"x": "a\u2028b"}`)},
		{Payload: json.RawMessage(`{}`)},
	})
	if err != nil {
		t.Fatalf("send of escaped characters: %v; want them stored", err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 2)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("read %+v, %v; want 2 messages", msgs, err)
	}
	var got struct{ V, X string }
	if err := json.Unmarshal(msgs[0].Payload, &got); err != nil || got.V != `€ 😀 é \u00e9` {
		t.Errorf("payload read back %s (%v); want the characters its escapes name", msgs[0].Payload, err)
	}
	if err := json.Unmarshal(msgs[0].Headers, &got); err != nil || got.X != "a\u2028b" {
		t.Errorf("headers read back %s (%v); want the character the escape names", msgs[0].Headers, err)
	}

	out := "line one\u2028line two\u2029 é 😀"
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "failed",
		Detail: store.FailureDetail{Output: out, OutputSource: "stderr"}}}}); err != nil {
		t.Fatalf("retry with output holding U+2028: %v; want it written", err)
	}
	moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonNonRetryable, MaxRetries: 5,
		Failure: &store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "failed: " + out, Detail: store.FailureDetail{Output: out, OutputSource: "stderr"}}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter with output holding U+2028: %v, %v; want it written", moved, err)
	}
	hist, err := s.FailureHistory(ctx, store.DLQName(q), moved[0].DLQMsgID)
	if err != nil || len(hist) != 1 || hist[0].Detail.Output != out {
		t.Fatalf("history %+v, %v; want the one failure with its output whole", hist, err)
	}
	if err := s.CheckCorrectedPayload(ctx, json.RawMessage(`{"v": "\u00e9"}`)); err != nil {
		t.Fatalf("check of a corrected payload holding an escape: %v; want it passed", err)
	}
	rep, err := s.RetryDead(ctx, store.DLQName(q), []int64{moved[0].DLQMsgID}, store.RetryOptions{Payload: json.RawMessage(`{"v": "\u00e9"}`)})
	if err != nil || rep.Retried != 1 {
		t.Fatalf("retry with a corrected payload holding an escape: %+v, %v; want it retried", rep, err)
	}
	if err := s.RecordAudit(ctx, store.AuditEntry{Client: "cli", Transport: "cli", Tool: "send",
		Arguments: json.RawMessage(`{"headers": {"x": "a\u2028b \u00e9"}}`), Result: json.RawMessage(`{"error": "x\u2029"}`)}); err != nil {
		t.Fatalf("audit entry holding escapes: %v; want it recorded", err)
	}
}

// In a LATIN1 database, a filter on error text or class finds the dead
// letters whose failure held characters LATIN1 cannot hold, kept as
// escapes: searched as the handler said it (Ошибка), not refused as a
// character the database has no room for. The summary and a bulk move by
// the same filter take the same messages.
func TestFiltersOfALatin1Database(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewLatin1Database(t))
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Message: "Zahlung abgelehnt: Ошибка платежа 😀", Class: "Fehler—ü"},
		pgtest.DeadSpec{Message: "Zahlung abgelehnt: timeout", Class: "Fehler"})
	for _, f := range []store.DeadFilter{
		{Queue: q, Text: "Ошибка платежа"},
		{Queue: q, Text: "😀"},
		{Queue: q, ErrorClass: "Fehler—ü"},
		{Text: "Ошибка", ErrorClass: "Fehler—ü"},
	} {
		page, err := s.ListDead(ctx, f, "", 10)
		if err != nil || len(page.Items) != 1 {
			t.Errorf("list by %+v: %d messages, %v; want the one whose failure held it", f, len(page.Items), err)
		}
		groups, err := s.SummarizeDead(ctx, f)
		if err != nil || len(groups) != 1 || groups[0].Count != 1 {
			t.Errorf("summary by %+v: %+v, %v; want one group of one", f, groups, err)
		}
	}
	if n, err := s.DiscardDead(ctx, store.DLQName(q), ids); err != nil || n != 2 {
		t.Fatalf("discard: %d, %v; want 2", n, err)
	}
	page, err := s.ListDiscarded(ctx, store.DLQName(q), store.DiscardedFilter{ErrorClass: "Fehler—ü"}, "", 10)
	if err != nil || len(page.Items) != 1 {
		t.Errorf("discarded of class Fehler—ü: %d, %v; want the one", len(page.Items), err)
	}
}
