package ops_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A role that may move messages but not write the audit log retries a dead
// message; its audit entry is not held for a privilege that waiting does
// not grant, keeping a command from ending for half a minute: it is given
// up at once as unrecorded, saying what to grant.
func TestAuditEntryRefusedForAPrivilegeIsNotHeld(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := deadForRole(t, "GRANT SELECT, USAGE ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO %[1]s",
		"GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO %[1]s", "REVOKE INSERT ON pgbus.audit_log FROM %[1]s")
	st, q, ids, role := r.st, r.q, r.ids, r.role

	var unrecorded pgtest.SyncBuffer
	svc := newService(t, st, ops.Options{Unrecorded: &unrecorded})
	rep, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || rep.Retried != 1 {
		t.Fatalf("retry as a role that may move messages: %+v, %v; want it retried", rep, err)
	}
	got := unrecorded.String()
	for _, want := range []string{`"tool":"dlq_retry"`, "permission denied", "the database role " + role + " may not write the audit log", "INSERT on pgbus.audit_log"} {
		if !strings.Contains(got, want) {
			t.Errorf("the unrecorded entries, once the retry returned, do not say %q: %q", want, got)
		}
	}
	svc.Close(context.Background())
	if n := strings.Count(unrecorded.String(), `"tool":"dlq_retry"`); n != 1 {
		t.Errorf("the retry's entry is given up %d times, want once:\n%s", n, unrecorded.String())
	}
}

// A role that may only read does dry runs and is refused a write: the
// audit log cannot take their entries, and they are not given up as
// unrecorded, whose line says the operation was done as its entry says.
func TestAuditOfARoleThatMayOnlyRead(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := deadForRole(t)
	st, q, ids, owner := r.st, r.q, r.ids, r.owner

	var unrecorded, logs pgtest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := newService(t, st, ops.Options{Unrecorded: &unrecorded, Logger: logger})
	dry, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil || dry.Retried != 1 {
		t.Fatalf("dry run as a role that may only read: %+v, %v; want one message that would be retried", dry, err)
	}
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); !store.IsPermissionDenied(err) {
		t.Fatalf("discard as a role that may only read: %v; want permission denied", err)
	}
	svc.Close(context.Background())
	if got := unrecorded.String(); got != "" {
		t.Errorf("operations that changed nothing are given up as unrecorded:\n%s", got)
	}
	if n := strings.Count(logs.String(), "this operation changed nothing"); n != 2 {
		t.Errorf("the log says %d times that an operation changed nothing and could not be recorded, want 2:\n%s", n, logs.String())
	}
	if n := pgtest.Int(t, owner, "SELECT count(*) FROM pgmq.q_"+q+"_dlq"); n != 1 {
		t.Errorf("the DLQ holds %d messages after a dry run and a refused discard, want 1", n)
	}
}

// roleDead is a database of its own (GRANT ... ON ALL TABLES fails when
// another test drops a queue's tables meanwhile) holding one dead message
// of queue q, its owner's store, and the store of a role of its own.
type roleDead struct {
	owner, st    *store.Store
	q, role, url string
	ids          []int64
}

// deadForRole makes a roleDead whose role may use the schemas and read
// their tables, and is given grants too, each with %[1]s for the role.
func deadForRole(t *testing.T, grants ...string) roleDead {
	t.Helper()
	url := pgtest.NewDatabase(t)
	r := roleDead{owner: pgtest.OpenStore(t, url), url: url}
	r.q = newQueue(t, r.owner, nil)
	r.ids = pgtest.DeadLetter(t, r.owner, r.q, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	role, roleURL := pgtest.NewRole(t, url)
	r.role = role
	for _, g := range append([]string{"GRANT USAGE ON SCHEMA pgmq, pgbus TO %[1]s", "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO %[1]s"}, grants...) {
		pgtest.Exec(t, url, fmt.Sprintf(g, role))
	}
	pool, err := pgxpool.New(testContext(t), roleURL)
	if err != nil {
		t.Fatal(err)
	}
	r.st = store.New(pool)
	t.Cleanup(r.st.Close)
	return r
}

// A call the role may not make fails as a refused privilege, not as a
// database that does not answer: its kind says so, and its message that
// trying again will not help and which grants let the role, an
// operator's for a write and a reader's for a read.
func TestRefusedPrivilegeSaysWhatToGrant(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := deadForRole(t)
	svc := newService(t, r.st, ops.Options{})
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: r.ids, Filter: ops.DeadFilter{Queue: r.q}})
	if kind := ops.ErrorKind(err); kind != ops.KindPermission {
		t.Fatalf("retry as a role that may only read: kind %q (%v); want %q", kind, err, ops.KindPermission)
	}
	msg := err.Error()
	for _, want := range []string{"the database role " + r.role + " lacks a privilege", "nothing was changed", "trying again will not help",
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "` + r.role + `"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refused retry does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "does not answer") || len(ops.NextSteps(err)) != 0 {
		t.Errorf("the refused retry points at the database's health: %s (next %v)", msg, ops.NextSteps(err))
	}

	pgtest.Exec(t, r.url, "REVOKE SELECT ON pgmq.q_"+r.q+"_dlq FROM "+r.role)
	_, err = svc.DLQShow(ctx, ops.DLQShowRequest{Queue: r.q, MsgID: r.ids[0]})
	if kind := ops.ErrorKind(err); kind != ops.KindPermission || !strings.Contains(err.Error(), `GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "`+r.role+`"`) ||
		strings.Contains(err.Error(), "INSERT") {
		t.Fatalf("show as a role that may not read the DLQ: kind %q, %v; want a refused privilege naming the read grants", kind, err)
	}
}
