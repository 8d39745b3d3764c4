package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A group's key no DLQ holds any more, as one saved in a runbook before an
// upgrade regrouped error texts: retry-all by it exits 3 (not found), its
// --json error naming the key and, as its next step, the summary of the
// other filters; without --yes it is refused in the same words rather than
// counted as 0 messages; list by it says so in a note, with the summary
// next. Nothing moves.
func TestGroupKeyHeldNowhereCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "mail")
	pgtest.DeadLetterN(t, s, "mail", 2, pgtest.DeadSpec{Kind: "mail", Class: "Bounce", Message: "mailbox full"})
	key := "9906b02f-1b2d-3e4f-8a9b-0c1d2e3f4a5b"
	said := func(what, text string) {
		t.Helper()
		for _, w := range []string{"no dead-letter group has key " + key + " any more", "an upgrade groups error texts differently", "list the groups"} {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q does not say %q", what, text, w)
			}
		}
	}
	dead := `SELECT count(*) FROM pgmq.q_mail_dlq`

	r := pgbus(t, d.env, "dlq", "retry-all", "--queue", "mail", "--group", key, "--yes", "--json")
	e := decodeErrorJSON(t, r)
	if r.code != 3 || e.Kind != "not_found" || e.ExitCode != 3 {
		t.Errorf("retry-all by a key held nowhere: exit %d, %+v; want 3, not_found", r.code, e)
	}
	said("retry-all --json", e.Error)
	if len(e.Next) != 1 || e.Next[0].Command != "pgbus dlq summary --queue mail" {
		t.Errorf("retry-all by a key held nowhere: next %+v; want pgbus dlq summary --queue mail", e.Next)
	}

	msg := d.fails(t, 3, "dlq", "retry-all", "--queue", "mail", "--group", key)
	said("retry-all without --yes", msg)
	if !strings.Contains(msg, "see pgbus dlq summary --queue mail") || strings.Contains(msg, "refusing") {
		t.Errorf("retry-all without --yes by a key held nowhere: %q; want the summary next, not a refusal to retry none", msg)
	}

	out := d.ok(t, "dlq", "list", "--queue", "mail", "--group", key)
	said("list", out)
	if !strings.Contains(out, "next: pgbus dlq summary --queue mail") {
		t.Errorf("list by a key held nowhere:\n%s\nwant the summary next", out)
	}
	out = d.ok(t, "dlq", "summary", "--group", key)
	said("summary", out)
	if !strings.Contains(out, "next: pgbus dlq summary ") {
		t.Errorf("summary by a key held nowhere:\n%s\nwant the summary of every DLQ next", out)
	}
	if n := d.count(t, dead); n != 2 {
		t.Fatalf("%d dead messages left after calls by a key held nowhere; want the 2 there were", n)
	}
}
