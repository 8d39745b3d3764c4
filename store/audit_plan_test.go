package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A page of the audit log by a client or a tool with few entries, in a log
// of many others, walks that client's or tool's index newest first: a walk
// of the whole log by id passes every other entry before it finds the few
// (a year of a busy log: a million entries, a second a page). So does a
// statement the server caches, once it plans it generically, for any
// client or tool.
func TestAuditPagesOfAClientOrToolUseTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	conn := connect(t, url, "")
	// The few entries of client "rare" and tool "rare_tool" are the
	// oldest: newest first, the whole log lies before them.
	if _, err := conn.Exec(ctx, `INSERT INTO pgbus.audit_log (client, tool)
		SELECT CASE WHEN i <= 20 THEN 'rare' ELSE 'client' || (i % 3) END,
		       CASE WHEN i <= 20 THEN 'rare_tool' ELSE 'tool' || (i % 4) END
		FROM generate_series(1, 30000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE pgbus.audit_log`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		filter store.AuditFilter
		index  string
	}{
		{store.AuditFilter{Client: "rare"}, "audit_log_client_id_idx"},
		{store.AuditFilter{Tool: "rare_tool"}, "audit_log_tool_id_idx"},
	} {
		for _, mode := range []string{"auto", "force_generic_plan"} {
			for _, mark := range []int64{0, 30000} { // a first page, and a later one
				plan := auditPlan(t, conn, mode, c.filter, mark)
				if !strings.Contains(plan, c.index) {
					t.Errorf("filter %+v, plan_cache_mode %s, mark %d: the plan does not use %s:\n%s", c.filter, mode, mark, c.index, plan)
				}
			}
		}
	}
}

// auditPlan is the plan of ListAudit's statement for filter f, prepared
// and run under plan_cache_mode mode as pgx runs it.
func auditPlan(t *testing.T, conn *pgx.Conn, mode string, f store.AuditFilter, mark int64) string {
	t.Helper()
	ctx := testContext(t)
	sql, args := store.AuditListSQL(f, int64(1<<63-1), mark, 50)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `PREPARE audit_page AS `+sql); err != nil {
		t.Fatal(err)
	}
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = sqlLiteral(t, a)
	}
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE audit_page(`+strings.Join(params, ", ")+`)`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DEALLOCATE audit_page`); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// sqlLiteral is a statement's argument as SQL, for EXECUTE, which takes
// no parameters of its own.
func sqlLiteral(t *testing.T, a any) string {
	t.Helper()
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case int, int64:
		return fmt.Sprint(v)
	case string:
		return quote(v)
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]"
	case time.Time:
		return quote(v.UTC().Format(time.RFC3339Nano)) + "::timestamptz"
	}
	t.Fatalf("no SQL literal for %T", a)
	return ""
}

// A later page of the audit log (one given the first page's mark) looks up
// the completion of each pending entry it reads through the index on
// completes, one entry at a time: a subquery the planner may hash read the
// whole log into a hash table on every page instead (a second a page on a
// log of 250,000 entries).
func TestAuditLaterPagesLookUpCompletionsByIndex(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	conn := connect(t, url, "")
	// A log left by retention: many operations, each a pending entry and
	// the entry that completes it, and others of one entry.
	if _, err := conn.Exec(ctx, `INSERT INTO pgbus.audit_log (client, tool, pending)
		SELECT 'client' || (i % 3), 'tool' || (i % 4), i % 2 = 0 FROM generate_series(1, 40000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO pgbus.audit_log (client, tool, completes)
		SELECT client, tool, id FROM pgbus.audit_log WHERE pending AND id % 10 <> 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE pgbus.audit_log`); err != nil {
		t.Fatal(err)
	}
	for _, f := range []store.AuditFilter{{}, {Client: "client1"}, {ExceptTools: []string{"tool1"}}} {
		for _, mode := range []string{"auto", "force_generic_plan"} {
			plan := auditPlan(t, conn, mode, f, 60000)
			if strings.Contains(plan, "hashed SubPlan") || strings.Contains(plan, "Seq Scan") {
				t.Errorf("filter %+v, plan_cache_mode %s: a later page's plan scans the log:\n%s", f, mode, plan)
			}
		}
	}
}
