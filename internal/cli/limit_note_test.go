package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A retry-all or discard by filter that stops at its --limit with more
// messages matching says so in words, with how many are left, and its next line is the command that
// moves the rest of the same selection: the same filters and limit, not
// every dead message. One that matched exactly its --limit says neither:
// the command would find nothing.
func TestLimitReachedSaysSoAndKeepsTheFilters(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.CreateQueue(t, s, "emails")
	pgtest.DeadLetterN(t, s, "orders", 3, pgtest.DeadSpec{Class: "http.503"})
	pgtest.DeadLetterN(t, s, "orders", 2, pgtest.DeadSpec{Class: "bad.Input"})
	pgtest.DeadLetterN(t, s, "emails", 2, pgtest.DeadSpec{Class: "http.503"})

	for _, c := range []struct{ verb, left string }{{"retry-all", "2 more match"}, {"discard", "1 more matches"}} {
		out := d.ok(t, "dlq", c.verb, "--queue", "orders", "--error-class", "http.503", "--limit", "1", "--yes")
		want := "next: pgbus dlq " + c.verb + " --error-class http.503 --limit 1 --queue orders --yes"
		if !strings.Contains(out, ", the --limit: "+c.left+" (see next)") || !strings.Contains(out, want) {
			t.Errorf("dlq %s stopped at --limit 1 printed:\n%s\nwant the limit said with %q left and %q", c.verb, out, c.left, want)
		}
	}
	if got := pgtest.Live(t, s, "emails_dlq"); got != 2 {
		t.Errorf("the DLQ of emails holds %d; want its 2, untouched", got)
	}
	if got := pgtest.Live(t, s, "orders_dlq"); got != 3 {
		t.Errorf("the DLQ of orders holds %d; want 3 (1 retried and 1 discarded of 5)", got)
	}

	// The last message of the class matches exactly the limit.
	out := d.ok(t, "dlq", "discard", "--queue", "orders", "--error-class", "http.503", "--limit", "1", "--yes")
	if strings.Contains(out, "--limit: more") || strings.Contains(out, "next: pgbus dlq discard ") || !strings.Contains(out, "discarded 1 dead message (kept in the DLQ archive until pgbus dlq purge or the queue's dead retention") {
		t.Errorf("dlq discard of exactly its --limit printed:\n%s\nwant 1 discarded, without the limit said or a call again", out)
	}
}
