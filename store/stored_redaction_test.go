package store_test

import (
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

// A secret in an error message of several megabytes is hidden too, and
// what is stored is cut to the history's limit.
func TestHugeErrorTextIsRedactedBeforeItIsCut(t *testing.T) {
	s := testStore(t)
	q := newQueue(t, s)
	const token = "sk_live_AbCdEf0123456789"
	huge := "api_key=" + token + "\n" + strings.Repeat(strings.Repeat("x", 99)+"\n", 30_000)
	pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: huge, Trace: huge})
	stored := storedErrorText(t, s, q)
	if strings.Contains(stored, token) || strings.Contains(stored, token[8:]) {
		t.Fatalf("the secret of a %d-byte error message was stored", len(huge))
	}
	if !strings.Contains(stored, "api_key="+redact.Marker) {
		t.Errorf("the stored text lost its redacted key: %.200s", stored)
	}
	if n := len(stored); n > 2*(store.HistoryErrorMessageMax+store.HistoryBacktraceMax)+4*store.BlockErrorMessageMax {
		t.Errorf("stored %d bytes of error text for one message, want it cut to the limits", n)
	}
}
