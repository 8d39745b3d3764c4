package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// An unfinished entry says whether its operation still runs: the database
// session it holds while it runs is there, and the entry says so, naming
// it and when the operation started; once that session has ended the
// entry says the operation did not finish, its counts maybe partial. A role
// that may only read is told the same. Where the locks cannot be read, the
// entry reads as before: still running, or stopped partway.
func TestAuditUnfinishedSaysWhetherItStillRuns(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 5, pgtest.DeadSpec{Kind: "k", Class: "Down"})
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	cctx := ops.WithClient(ctx, client)

	reader, readerURL := pgtest.NewRole(t, url)
	for _, g := range []string{"GRANT USAGE ON SCHEMA pgmq, pgbus TO %[1]s", "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO %[1]s"} {
		pgtest.Exec(t, url, fmt.Sprintf(g, reader))
	}
	pool, err := pgxpool.New(ctx, readerURL)
	if err != nil {
		t.Fatal(err)
	}
	rs := store.New(pool)
	t.Cleanup(rs.Close)
	readerSvc := newService(t, rs, ops.Options{})

	// The newest dead message is locked: the retry by filter (oldest
	// first) moves the others and waits on it.
	release, done := retryBehindALock(cctx, t, s, svc, q, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
	pgtest.Eventually(t, time.Minute, "the retry waiting on the locked message", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})

	entry := func(svc *ops.Service) (ops.AuditEntry, ops.AuditPage) {
		t.Helper()
		page, err := svc.Audit(ctx, ops.AuditRequest{Client: client, Op: ops.OpDLQRetry})
		if err != nil || len(page.Items) != 1 || !page.Items[0].Unfinished {
			t.Fatalf("audit of the retry under way: %+v, %v", page, err)
		}
		return page.Items[0], page
	}
	results := func(e ops.AuditEntry) map[string]string {
		var r map[string]string
		if err := json.Unmarshal(e.Result, &r); err != nil {
			t.Fatalf("result %s: %v", e.Result, err)
		}
		return r
	}
	for who, svc := range map[string]*ops.Service{"the operator": svc, "a role that may only read": readerSvc} {
		e, page := entry(svc)
		r := results(e)
		if !e.Running || r["outcome"] != "unknown" || !strings.Contains(r["running"], "still running") || !strings.Contains(r["running"], "database session ") ||
			!strings.Contains(r["running"], e.At.UTC().Format(time.RFC3339)) || r["not_finished"] != "" {
			t.Errorf("%s reads the retry under way as %+v, result %s; want it still running, naming its session and when it started", who, e, e.Result)
		}
		if len(page.Notes) != 1 || !strings.Contains(page.Notes[0], "1 entry is still running") {
			t.Errorf("%s's notes of the retry under way: %q", who, page.Notes)
		}
	}

	// Where the locks cannot be read, the entry reads as before.
	pgtest.Exec(t, url, `REVOKE SELECT ON pg_catalog.pg_locks FROM PUBLIC`)
	e, _ := entry(readerSvc)
	if r := results(e); e.Running || !strings.Contains(r["not_finished"], "it is still running, or its process stopped partway") {
		t.Errorf("a reader who may not read the locks reads the retry under way as %+v, result %s; want still running or stopped, as before", e, e.Result)
	}
	pgtest.Exec(t, url, `GRANT SELECT ON pg_catalog.pg_locks TO PUBLIC`)

	// The session the retry holds ends, as it does when its process is
	// killed: the entry says it did not finish.
	pgtest.Int(t, s, `SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l JOIN pgbus.audit_log a ON a.run_pid = l.pid
		WHERE a.client = $1 AND a.pending AND l.locktype = 'advisory'`, client)
	pgtest.Eventually(t, time.Minute, "the retry's session to end", func() bool {
		e, _ := entry(svc)
		return !e.Running
	})
	for who, svc := range map[string]*ops.Service{"the operator": svc, "a role that may only read": readerSvc} {
		e, page := entry(svc)
		r := results(e)
		if e.Running || r["running"] != "" || !strings.Contains(r["not_finished"], "the database session that ran it") ||
			!strings.Contains(r["not_finished"], "ended before") || !strings.Contains(r["not_finished"], "counts may be partial") {
			t.Errorf("%s reads the retry whose session ended as %+v, result %s; want it not finished, its session ended", who, e, e.Result)
		}
		if len(page.Notes) != 1 || !strings.Contains(page.Notes[0], "1 entry did not finish, outcome unknown") || !strings.Contains(page.Notes[0], "ended") {
			t.Errorf("%s's notes of the retry whose session ended: %q", who, page.Notes)
		}
	}

	if err := release(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.out.Retried != 5 {
		t.Fatalf("the retry: %+v, %v", r.out, r.err)
	}
	page, err := readerSvc.Audit(ctx, ops.AuditRequest{Client: client, Op: ops.OpDLQRetry})
	if err != nil || len(page.Items) != 1 || page.Items[0].Unfinished || page.Items[0].Running || len(page.Notes) != 0 {
		t.Fatalf("audit of the retry ended: %+v, %v", page, err)
	}
}
