package cli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// retryAllError is the JSON error line pgbus dlq retry-all --json leaves
// on stderr.
type retryAllError struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
	Next  []struct {
		Command string `json:"command"`
		Why     string `json:"why"`
	} `json:"next"`
}

// A retry-all as a role that lacks the privileges to move some queues'
// messages says so, with the grants, whatever else it moved: every
// message refused alike, it fails as a refused privilege (kind
// permission), not as "0 retried" beside the database's raw error; some
// moved, its error still has that kind and explains the first failure.
// No step points at hints that are not there, and a summary where nothing
// moved for a failure does not put it on the limit.
func TestRetryAllFailuresSayWhatTheRoleLacks(t *testing.T) {
	t.Parallel()
	owner := newDB(t)
	s := pgtest.OpenStore(t, owner.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.CreateQueue(t, s, "mail")
	pgtest.RestartDLQ(t, s, "mail", 1000) // ids of its own, found in one DLQ
	pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "charge"})
	pgtest.DeadLetter(t, s, "mail", pgtest.DeadSpec{Kind: "charge"}, pgtest.DeadSpec{Kind: "charge"})
	pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "charge"})
	pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "late", Headers: `{"pgbus_kind": "late", "pgbus_deadline": "2020-01-01T00:00:00Z"}`})
	pgtest.DeadLetter(t, s, "mail", pgtest.DeadSpec{Kind: "late"}, pgtest.DeadSpec{Kind: "late"})
	byID := pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "one"})
	byID = append(byID, pgtest.DeadLetter(t, s, "mail", pgtest.DeadSpec{Kind: "one"})...)
	role, roleURL := pgtest.NewRole(t, owner.url)
	for _, grant := range operatorGrants(role) {
		pgtest.Exec(t, owner.url, grant)
	}
	pgtest.Exec(t, owner.url, "REVOKE INSERT, UPDATE, DELETE ON pgmq.q_mail, pgmq.q_mail_dlq FROM "+role)
	op := db{url: roleURL, env: []string{"DATABASE_URL=" + roleURL}}
	grant := `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "` + role + `"`

	lastLine := func(stderr string) retryAllError {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		var e retryAllError
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
			t.Fatalf("the last line of stderr is no JSON error: %v\n%s", err, stderr)
		}
		return e
	}
	moved := func() string {
		t.Helper()
		var s string
		owner.query(t, `SELECT concat_ws(' ', (SELECT count(*) FROM pgmq.q_orders), (SELECT count(*) FROM pgmq.q_orders_dlq), (SELECT count(*) FROM pgmq.q_mail), (SELECT count(*) FROM pgmq.q_mail_dlq))`, &s)
		return s
	}
	// Every message refused alike: the call's error, as by ids.
	r := pgbus(t, op.env, "dlq", "retry-all", "--queue", "mail", "--kind", "charge", "--yes", "--limit", "1", "--json")
	e := lastLine(r.stderr)
	if r.code == 0 || e.Kind != "permission" || !strings.Contains(e.Error, "lacks a privilege") || !strings.Contains(e.Error, grant) ||
		strings.Contains(r.stdout, "retried") || strings.Contains(r.stderr, "hints above") {
		t.Fatalf("retry-all refused a privilege on every message: exit %d, stdout %q, error %+v; want kind permission naming the grants", r.code, r.stdout, e)
	}
	r = pgbus(t, op.env, "dlq", "retry-all", "--queue", "mail", "--kind", "charge", "--yes", "--limit", "1")
	if r.code == 0 || !strings.Contains(r.stderr, grant) || strings.Contains(r.stdout, "retried 0") || strings.Contains(r.stdout, "--limit") {
		t.Fatalf("retry-all refused a privilege on every message: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if now := moved(); now != "0 4 0 5" {
		t.Fatalf("after the refused retries the queues and DLQs hold %s, want 0 4 0 5", now)
	}

	// Nothing moved, for failures of different causes: no word of the limit.
	r = pgbus(t, op.env, "dlq", "retry-all", "--kind", "late", "--yes", "--limit", "2")
	first, _, _ := strings.Cut(r.stdout, "\n")
	if r.code != 1 || !strings.HasPrefix(first, "retried 0 dead messages; 2 failed (first: ") || strings.Contains(first, "--limit") {
		t.Fatalf("retry-all that moved nothing, for a deadline and a privilege: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// Some moved: the error has the kind of the failures, explained.
	r = pgbus(t, op.env, "dlq", "retry-all", "--kind", "charge", "--yes", "--limit", "3", "--json")
	e = lastLine(r.stderr)
	if r.code != 1 || e.Kind != "permission" || !strings.HasPrefix(e.Error, "2 of 3 messages could not be retried; first: message ") ||
		!strings.Contains(e.Error, "lacks a privilege") || !strings.Contains(e.Error, grant) || strings.Contains(r.stdout+r.stderr, "hints above") {
		t.Fatalf("retry-all that moved one and was refused a privilege on two: exit %d\nstdout: %s\nerror: %+v", r.code, r.stdout, e)
	}
	if n := owner.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 1 {
		t.Fatalf("queue orders holds %d, want the one retried", n)
	}

	// By ids, the same: one moved, one refused.
	r = pgbus(t, op.env, "dlq", "retry", strconv.FormatInt(byID[0], 10), strconv.FormatInt(byID[1], 10), "--json")
	e = lastLine(r.stderr)
	if r.code != 1 || e.Kind != "permission" || !strings.HasPrefix(e.Error, "1 of 2 ids could not be retried (failed: ") || !strings.Contains(e.Error, "lacks a privilege") || !strings.Contains(e.Error, grant) {
		t.Fatalf("retry by ids that moved one and was refused a privilege on the other: exit %d\nstdout: %s\nerror: %+v", r.code, r.stdout, e)
	}
}
