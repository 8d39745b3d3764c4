package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/store"
)

// storedErrorText is every error message and backtrace stored for queue q
// and its DLQ: the dead-letter blocks and the failure history, as they are
// in the tables.
func storedErrorText(t *testing.T, s *store.Store, q string) string {
	t.Helper()
	var blocks, history string
	ctx := testContext(t)
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(headers::text, E'\n'), '') FROM pgmq."q_`+store.DLQName(q)+`"`).Scan(&blocks); err != nil {
		t.Fatal(err)
	}
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(error_message || E'\n' || coalesce(backtrace, ''), E'\n'), '')
		FROM pgbus.failures WHERE queue_name IN ($1, $2)`, q, store.DLQName(q)).Scan(&history); err != nil {
		t.Fatal(err)
	}
	if blocks == "" || history == "" {
		t.Fatalf("nothing stored for %s: blocks %q, history %q", q, blocks, history)
	}
	return blocks + "\n" + history
}

// Error messages and backtraces are stored with their secrets hidden, in
// the dead-letter block and in the failure history alike; what is not a
// secret is kept.
func TestErrorTextIsStoredRedacted(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	var specs []pgtest.DeadSpec
	for _, sec := range secrettest.Corpus {
		switch sec.Where {
		case secrettest.Error:
			specs = append(specs, pgtest.DeadSpec{Kind: "k", Message: "charge failed: " + sec.Text, Trace: "main.charge()"})
		case secrettest.Backtrace:
			specs = append(specs, pgtest.DeadSpec{Kind: "k", Message: "charge failed", Trace: sec.Text})
		}
	}
	if len(specs) < 10 {
		t.Fatalf("the corpus has %d error texts, want many", len(specs))
	}
	pgtest.DeadLetter(t, s, q, specs...)
	stored := storedErrorText(t, s, q)
	secrettest.AssertHidden(t, stored)
	for _, kept := range []string{"charge failed", "main.charge()", redact.Marker} {
		if !strings.Contains(stored, kept) {
			t.Errorf("the stored error text lost %q:\n%s", kept, stored)
		}
	}
}

// The text filter matches the stored, redacted error message: a guess at a
// secret matches nothing, so listing dead messages tells nobody what a
// [REDACTED] hides, while the rest of the message still matches.
func TestTextFilterCannotTestGuessesAtSecrets(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	const token = "hunter2-Zq9xW"
	pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Kind: "k", Message: "login refused for password=" + token},
		pgtest.DeadSpec{Kind: "k", Message: "GET https://ops:" + token + "@api.example.com/v1 failed"})
	count := func(text string) int {
		t.Helper()
		page, err := s.ListDead(testContext(t), store.DeadFilter{Queue: q, Text: text}, "", 100)
		if err != nil {
			t.Fatalf("list with text %q: %v", text, err)
		}
		return len(page.Items)
	}
	for _, guess := range []string{token, "hunter", "password=h", "ops:h", token[3:9]} {
		if n := count(guess); n != 0 {
			t.Errorf("text %q, part of a secret, matched %d dead messages, want 0", guess, n)
		}
	}
	if n := count("login refused"); n != 1 {
		t.Errorf("text %q matched %d dead messages, want 1", "login refused", n)
	}
	if n := count(redact.Marker); n != 2 {
		t.Errorf("text %q matched %d dead messages, want 2", redact.Marker, n)
	}
}

// Error text is redacted before it is cut to what is kept: a URL whose
// password runs across the cut keeps no part of the password (cut first,
// the @ that marks it as one would be gone). An error message of
// megabytes is stored cut to the history's limit, its secrets hidden.
func TestErrorTextIsRedactedBeforeItIsCut(t *testing.T) {
	// Not parallel: redacting the huge text takes many seconds of CPU under
	// the race detector, within a context of two minutes, which beside the
	// package's other tests on a busy machine it outlasted.
	s := testStore(t)
	q := newQueue(t, s)
	const password = "hunter2-Zq9xW-longer-than-the-rest"
	across := func(max int) string {
		return strings.Repeat("x", max-30) + " https://ops:" + password + "@api.example.com/v1 failed"
	}
	huge := "api_key=sk_live_AbCdEf0123456789\n" + strings.Repeat(strings.Repeat("y", 99)+"\n", 30_000)
	ids := pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Kind: "k", Message: across(store.HistoryErrorMessageMax), Trace: across(store.HistoryBacktraceMax)},
		pgtest.DeadSpec{Kind: "k", Message: huge, Trace: huge})
	stored := storedErrorText(t, s, q)
	for _, leak := range []string{password[:8], "sk_live_AbCdEf"} {
		if strings.Contains(stored, leak) {
			t.Errorf("the stored error text holds %q", leak)
		}
	}
	if !strings.Contains(stored, "api_key="+redact.Marker) {
		t.Errorf("the stored text lost its redacted key")
	}
	var longest int
	if err := s.Pool().QueryRow(testContext(t), `SELECT max(length(error_message)) FROM pgbus.failures WHERE queue_name = $1`, store.DLQName(q)).Scan(&longest); err != nil {
		t.Fatal(err)
	}
	if longest != store.HistoryErrorMessageMax {
		t.Errorf("the longest stored error message has %d characters, want it cut to %d", longest, store.HistoryErrorMessageMax)
	}
	_, block := dlBlock(t, s, store.DLQName(q), ids[0])
	if msg := dlString(t, block, "error_message"); !strings.HasSuffix(msg, "…") || strings.Contains(msg, password[:8]) {
		t.Errorf("block error_message ends %q", msg[len(msg)-40:])
	}
}

// A message retried with a corrected payload, that then dies without a
// failure of its own (its deadline passed), does not get the history's
// note of the replacement, which quotes the original payload whole, as
// its block's error, nor as its previous trip's: the block would show a
// payload where an error is expected, and the text filter would match
// the secrets in it. Its own trip recorded no failure: the block's is
// the previous trip's.
func TestBlockErrorIsNeverTheReplacedPayload(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const secret = "hunter2-Zq9xW"
	dead := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "card declined", Payload: `{"password": "` + secret + `", "n": 1}`})
	rep, err := s.RetryDead(ctx, dlq, dead, store.RetryOptions{Payload: json.RawMessage(`{"n": 2}`)})
	if err != nil || len(rep.Moved) != 1 {
		t.Fatalf("retry with a corrected payload = %+v, %v", rep, err)
	}
	back := rep.Moved[0].MsgID
	moved, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, []store.DeadLetterItem{{MsgID: back, Reason: store.ReasonDeadlineExceeded, MaxRetries: 5}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter at the deadline = %v, %v", moved, err)
	}
	_, block := dlBlock(t, s, dlq, moved[0].DLQMsgID)
	if msg, ok := block["error_message"]; ok {
		t.Errorf("block error_message %q, want none: no failure was recorded on the last trip", msg)
	}
	prev, _ := block["previous_trip_error"].(map[string]any)
	if msg, _ := prev["error_message"].(string); strings.Contains(msg, secret) || strings.Contains(msg, "Original payload") || msg != "card declined" {
		t.Errorf("block previous_trip_error.error_message %q, want the last failure's, card declined", msg)
	}
	page, err := s.ListDead(ctx, store.DeadFilter{Queue: q, Text: secret}, "", 10)
	if err != nil || len(page.Items) != 0 {
		t.Errorf("text %q matched %d dead messages (%v), want 0", secret, len(page.Items), err)
	}
}

// A downstream's output kept with a failure (engine.OutputError, which a
// handler of its own fills as it likes) is stored with its secrets hidden,
// as the built-in handlers' already is.
func TestFailureOutputIsStoredRedacted(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-Zq9xW"
	out := "HTTP/1.1 401\nWWW-Authenticate: Bearer\n{\"error\": \"bad token\", \"token\": \"" + secret + "\"}"
	if _, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: id, Reason: store.ReasonNonRetryable, MaxRetries: 5,
		Failure: &store.Failure{Attempt: 1, Kind: "k", ErrorClass: "http.401", ErrorMessage: "unauthorized", Detail: store.FailureDetail{Output: out, OutputSource: "response_body"}}}}); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := s.Pool().QueryRow(ctx, `SELECT detail->>'output' FROM pgbus.failures WHERE queue_name = $1`, store.DLQName(q)).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, secret) || !strings.Contains(stored, `"error": "bad token"`) || !strings.Contains(stored, redact.Marker) {
		t.Errorf("stored output %q, want the token hidden and the rest kept", stored)
	}
}
