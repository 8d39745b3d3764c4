package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus dlq retry leaves a message whose deadline has passed in its DLQ,
// saying why and naming --clear-deadline; with it, the message goes back
// without its deadline, so that it runs.
func TestRetryPastTheDeadlineFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	ids := pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonDeadlineExceeded,
		Headers: `{"pgbus_kind": "charge", "pgbus_deadline": "2020-01-01T00:00:00Z"}`})
	id := fmt.Sprint(ids[0])
	if out := d.ok(t, "dlq", "show", id, "--queue", "orders"); !strings.Contains(out, "deadline:") || !strings.Contains(out, "2020-01-01") || !strings.Contains(out, "--clear-deadline") {
		t.Errorf("dlq show of a message past its deadline does not say so:\n%s", out)
	}
	r := pgbus(t, d.env, "dlq", "retry", id, "--queue", "orders")
	if r.code != 1 || !strings.Contains(r.stderr, "deadline") {
		t.Fatalf("retry past the deadline: exit %d, stderr %q; want 1, saying why", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "pgbus dlq retry "+id+" --clear-deadline --queue orders") {
		t.Errorf("retry past the deadline: stdout %q; want the command that clears it", r.stdout)
	}
	d.ok(t, "dlq", "retry", id, "--queue", "orders", "--clear-deadline")
	var n int
	var headers string
	d.query(t, `SELECT count(*), coalesce(max(headers::text), '') FROM pgmq.q_orders`, &n, &headers)
	if n != 1 || strings.Contains(headers, "pgbus_deadline") || !strings.Contains(headers, "charge") {
		t.Fatalf("orders after the retry: %d messages, headers %s; want one, without its deadline", n, headers)
	}
}

// A dry run of retry-all that finds a deadline passed prints no --expect,
// which the real call would refuse for that message, but the dry run
// again with --clear-deadline, as its help says; that one's --expect moves
// them all.
func TestRetryAllDryRunPastTheDeadline(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonDeadlineExceeded,
		Headers: `{"pgbus_kind": "charge", "pgbus_deadline": "2020-01-01T00:00:00Z"}`})
	pgtest.DeadLetterN(t, st, "orders", 2, pgtest.DeadSpec{Kind: "charge"})
	help := strings.Join(strings.Fields(pgbus(t, nil, "dlq", "retry-all", "--help").stdout), " ")
	if !strings.Contains(help, "a dry run that finds some prints no --expect") || !strings.Contains(help, "the dry run again with --clear-deadline, whose --expect moves them too") {
		t.Errorf("pgbus dlq retry-all --help does not say what a dry run past a deadline prints:\n%s", help)
	}
	r := pgbus(t, d.env, "dlq", "retry-all", "--all", "--dry-run")
	again := "next: pgbus dlq retry-all --all --clear-deadline --dry-run"
	if r.code != 1 || strings.Contains(r.stdout, "--expect") || !strings.Contains(r.stdout, again) {
		t.Fatalf("dry run past a deadline: exit %d\n%s\nwant exit 1, no --expect, and %q", r.code, r.stdout, again)
	}
	var dry ops.DLQRetry
	out := d.ok(t, "dlq", "retry-all", "--all", "--clear-deadline", "--dry-run", "--json")
	decodeStrict(t, out, &dry)
	if dry.Retried != 3 || dry.Expect == "" {
		t.Fatalf("dry run with --clear-deadline: %+v; want 3 and an expect", dry)
	}
	if out := d.ok(t, "dlq", "retry-all", "--all", "--clear-deadline", "--expect", dry.Expect, "--yes"); !strings.HasPrefix(out, "retried 3 dead messages") {
		t.Errorf("retry with the expect of the dry run with --clear-deadline:\n%s", out)
	}
}

// A retry-all, not a dry run, that leaves messages past their deadline
// exits 1, and its error, read alone by a script (--json on stderr), names
// the call that retries them with the deadline cleared, as its words say.
func TestRetryAllPastTheDeadlineNamesTheNextCallInItsError(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "charge", Reason: store.ReasonDeadlineExceeded,
		Headers: `{"pgbus_kind": "charge", "pgbus_deadline": "2020-01-01T00:00:00Z"}`})
	pgtest.DeadLetterN(t, st, "orders", 2, pgtest.DeadSpec{Kind: "charge"})
	r := pgbus(t, d.env, "dlq", "retry-all", "--queue", "orders", "--yes", "--json")
	e := errorLine(t, "retry-all past a deadline", r.stderr)
	want := "pgbus dlq retry-all --clear-deadline --limit 1000 --queue orders --yes"
	if r.code != 1 || len(e.Next) != 1 || e.Next[0].Command != want {
		t.Errorf("retry-all past a deadline: exit %d, error %+v; want 1 and next %q", r.code, e, want)
	}
}
