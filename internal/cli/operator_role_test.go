package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A role that may read and change rows in schemas pgmq and pgbus, with the
// grants the README gives an operator (or an agent's server that may
// repair), but owns nothing, runs every write command of the CLI against a
// database its owner migrated: DLQ retry, discard and purge, queue pause,
// resume and purge, send. Nothing is lost, and the DLQ's counts stay exact.
func TestOperatorRole(t *testing.T) {
	t.Parallel()
	owner := newDB(t)
	deadShop(t, owner) // queue shop with 7 dead messages
	role, roleURL := pgtest.NewRole(t, owner.url)
	for _, grant := range operatorGrants(role) {
		pgtest.Exec(t, owner.url, grant)
	}
	op := db{url: roleURL, env: []string{"DATABASE_URL=" + roleURL}}

	dead := owner.deadIDs(t)
	var retried ops.DLQRetry
	op.json(t, &retried, "dlq", "retry", fmt.Sprint(dead[0]), "--queue", "shop")
	if retried.Retried != 1 || !retried.OK() {
		t.Fatalf("dlq retry as the operator: %+v", retried)
	}
	var discarded ops.DLQDiscard
	op.json(t, &discarded, "dlq", "discard", fmt.Sprint(dead[1]), "--queue", "shop")
	if discarded.Discarded != 1 {
		t.Fatalf("dlq discard as the operator: %+v", discarded)
	}
	var all ops.DLQRetry
	op.json(t, &all, "dlq", "retry-all", "--queue", "shop", "--kind", "refund", "--yes")
	if all.Retried < 1 || !all.OK() {
		t.Fatalf("dlq retry-all as the operator: %+v", all)
	}
	if out := op.ok(t, "dlq", "purge", "--queue", "shop", "--yes"); !strings.Contains(out, "purged 1 archived dead message (discarded, or the original of a retry with --payload; archived at or before 20") {
		t.Fatalf("dlq purge as the operator: %s", out)
	}
	op.ok(t, "queue", "pause", "shop")
	op.ok(t, "queue", "resume", "shop")
	var runNow ops.QueueRunNow
	op.json(t, &runNow, "queue", "run-now", "shop")
	if runNow.Queue != "shop" || runNow.DryRun {
		t.Fatalf("queue run-now as the operator: %+v", runNow)
	}
	if id := strings.TrimSpace(op.ok(t, "send", "shop", `{"amount_cents": 5}`, "--kind", "charge")); id == "" {
		t.Fatal("send as the operator printed no id")
	}

	// What the counts say is what the tables hold.
	var sum ops.DLQSummary
	op.json(t, &sum, "dlq", "summary", "--queue", "shop")
	left := owner.count(t, `SELECT count(*) FROM pgmq.q_shop_dlq`)
	if sum.Total != int64(left) || left != len(dead)-2-all.Retried {
		t.Errorf("after the operator's changes the summary counts %d dead, the DLQ holds %d (of %d before)", sum.Total, left, len(dead))
	}
	if n := owner.count(t, `SELECT count(*) FROM pgmq.q_shop_dlq`); n != left {
		t.Errorf("the DLQ holds %d after the tool's retry, want %d", n, left)
	}
	live := owner.count(t, `SELECT count(*) FROM pgmq.q_shop`)
	if live < 3 {
		t.Errorf("queue shop holds %d live messages, want the retried ones and the one sent", live)
	}
	// pgbus serve with its write tools, over stdio: the agent's server.
	c, _, stderr := serveStdio(t, "--database-url", roleURL)
	last := owner.deadIDs(t)[0]
	var toolRetry ops.DLQRetry
	if err := json.Unmarshal([]byte(toolText(callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": "shop", "ids": []int64{last}}))), &toolRetry); err != nil || toolRetry.Retried != 1 {
		t.Fatalf("pgbus_dlq_retry as the operator: %+v, %v; serve's stderr: %s", toolRetry, err, stderr.String())
	}
	_ = c.Close()
	left--

	// Workers of a queue that exists, as the operator: they take jobs,
	// heartbeat, count, and leave vacuuming to autovacuum, without an
	// error of a privilege they lack.
	settled := func() int {
		return owner.count(t, `SELECT (SELECT count(*) FROM pgmq.a_shop) + (SELECT count(*) FROM pgmq.q_shop_dlq)`)
	}
	before := settled()
	work := workUntil(t, op.env, "the operator's workers to settle a message", func(string) bool { return settled() > before }, "--queue", "shop", "--handler", "demo")
	if work.code != 0 || strings.Contains(work.stderr, "permission denied") || strings.Contains(work.stderr, `"level":"ERROR"`) {
		t.Fatalf("pgbus work as the operator: exit %d\n%s", work.code, work.stderr)
	}

	// A queue a configuration file declares must exist: the operator may
	// not create its tables, and is told who can. Once the owner has
	// created it, the default privileges let the operator work it.
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  later:\n    max_retries: 4\n    handler: {type: demo}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	msg := op.fails(t, 1, "work", "--config", cfg, "--for", "1s")
	if !strings.Contains(msg, `may not create its tables`) || !strings.Contains(msg, "see pgbus queue create later") {
		t.Errorf("work --config declaring a new queue, as the operator: %s", msg)
	}
	owner.ok(t, "queue", "create", "later")
	owner.ok(t, "send", "later", `{"n": 1}`)
	work = workUntil(t, op.env, "the operator's workers to run the message of later", func(string) bool {
		st := owner.stats(t, "later")
		return st.Archived+st.DLQDepth+st.WaitingRetry > 0
	}, "--config", cfg)
	if work.code != 0 || strings.Contains(work.stderr, "permission denied") || strings.Contains(work.stderr, `"level":"ERROR"`) {
		t.Fatalf("pgbus work --config as the operator, its queue created by the owner: exit %d\n%s", work.code, work.stderr)
	}
	if st := owner.stats(t, "later"); st.Settings.MaxRetries != 4 || st.Depth+st.DLQDepth+st.Archived != 1 || st.Archived+st.DLQDepth+st.WaitingRetry == 0 {
		t.Errorf("queue later after the operator's workers: %+v; want the file's max_retries 4 and its message run", st)
	}

	// Workers of a queue whose table the role may not use say what to
	// grant, rather than only that a read failed.
	pgtest.Exec(t, owner.url, "REVOKE ALL ON pgmq.q_later FROM "+role)
	const denied = `"level":"ERROR","msg":"pgbus: this database role may not use the queue's tables: grant it SELECT, INSERT, UPDATE and DELETE`
	workUntil(t, op.env, "the workers to say what to grant", func(logs string) bool { return strings.Contains(logs, denied) }, "--queue", "later", "--handler", "demo")

	// A command that changes tables is refused, saying why.
	msg = op.fails(t, 1, "queue", "drop", "shop", "--yes")
	if !strings.Contains(msg, "owns the pgbus schemas") {
		t.Errorf("queue drop as the operator: %s", msg)
	}
}

// operatorGrants are the README's grants of an operator role.
func operatorGrants(role string) []string {
	return []string{
		"GRANT USAGE ON SCHEMA pgmq, pgbus TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO " + role,
		"GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO " + role,
		"REVOKE UPDATE, DELETE ON pgbus.audit_log FROM " + role,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + role,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON SEQUENCES TO " + role,
	}
}

// A role that may not migrate, started on a schema that lacks a migration
// (a new pgbus deployed before pgbus migrate ran), is told to run pgbus
// migrate as the role that may, and its next step leaves out the
// --database-url it was given: copied with it, the step was refused again.
func TestMigrateRefusedNextStepLeavesOutTheRolesURL(t *testing.T) {
	t.Parallel()
	owner := newDB(t)
	owner.ok(t, "migrate")
	role, roleURL := pgtest.NewRole(t, owner.url)
	for _, grant := range operatorGrants(role) {
		pgtest.Exec(t, owner.url, grant)
	}
	pgtest.Exec(t, owner.url, fmt.Sprintf(`DELETE FROM pgbus.schema_migrations WHERE version = %d`, migrationCount(t)))
	r := pgbus(t, nil, "queue", "create", "shop", "--database-url", roleURL)
	line := strings.TrimSpace(r.stderr)
	if r.code != 1 || !strings.Contains(line, "which the role "+role+" may not do") || !strings.Contains(line, "see pgbus migrate") {
		t.Fatalf("queue create as a role that may not migrate: exit %d, %q; want the refusal and pgbus migrate as its next step", r.code, line)
	}
	if strings.Contains(line, "--database-url") {
		t.Errorf("the next step carries the role's own --database-url, which is refused again: %q", line)
	}
}
