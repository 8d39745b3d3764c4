package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A retry-all or discard by filter that stops at its --limit says so in
// words, and its next line is the command that moves the rest of the same
// selection: the same filters and limit, not every dead message.
func TestLimitReachedSaysSoAndKeepsTheFilters(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.CreateQueue(t, s, "emails")
	pgtest.DeadLetterN(t, s, "orders", 3, pgtest.DeadSpec{Class: "http.503"})
	pgtest.DeadLetterN(t, s, "orders", 2, pgtest.DeadSpec{Class: "bad.Input"})
	pgtest.DeadLetterN(t, s, "emails", 2, pgtest.DeadSpec{Class: "http.503"})

	for _, verb := range []string{"retry-all", "discard"} {
		out := d.ok(t, "dlq", verb, "--queue", "orders", "--error-class", "http.503", "--limit", "1", "--yes")
		want := "next: pgbus dlq " + verb + " --error-class http.503 --limit 1 --queue orders --yes"
		if !strings.Contains(out, ", the --limit: more may match") || !strings.Contains(out, want) {
			t.Errorf("dlq %s stopped at --limit 1 printed:\n%s\nwant the limit said and %q", verb, out, want)
		}
	}
	if got := pgtest.Live(t, s, "emails_dlq"); got != 2 {
		t.Errorf("the DLQ of emails holds %d; want its 2, untouched", got)
	}
	if got := pgtest.Live(t, s, "orders_dlq"); got != 3 {
		t.Errorf("the DLQ of orders holds %d; want 3 (1 retried and 1 discarded of 5)", got)
	}
}
