package ops_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A retry by filter whose every message fails on a privilege the role
// lacks moved nothing for one cause: it fails as the same retry by ids
// does, of kind permission, saying the grants that let the role, rather
// than answering 0 retried with the database's raw error as the first of
// its failures.
func TestRetryByFilterRefusedAPrivilegeFails(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := deadForRole(t)
	pgtest.DeadLetter(t, r.owner, r.q, pgtest.DeadSpec{Kind: "charge"}, pgtest.DeadSpec{Kind: "charge"})
	svc := newService(t, r.st, ops.Options{})
	rep, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: r.q}, Limit: 2})
	if kind := ops.ErrorKind(err); kind != ops.KindPermission {
		t.Fatalf("retry by filter as a role that may only read: %+v, kind %q (%v); want %q", rep, kind, err, ops.KindPermission)
	}
	for _, want := range []string{"the database role " + r.role + " lacks a privilege", "trying again will not help",
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "` + r.role + `"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refused retry does not say %q: %s", want, err)
		}
	}
	if n := pgtest.Live(t, r.owner, r.q+"_dlq"); n != 3 {
		t.Fatalf("the DLQ holds %d, want 3", n)
	}
}

// A retry by filter that moves some messages and fails on others for a
// privilege the role lacks on their tables explains that failure as the
// call's own error would (the grants), gives it as the cause every
// failure shares, and points at no hints that are not there.
func TestRetryFailuresForAPrivilegeAreExplained(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := deadForRole(t)
	other := newQueue(t, r.owner, nil)
	pgtest.DeadLetter(t, r.owner, other, pgtest.DeadSpec{Kind: "charge"}, pgtest.DeadSpec{Kind: "charge"})
	pgtest.DeadLetter(t, r.owner, r.q, pgtest.DeadSpec{Kind: "charge"})
	pgtest.Exec(t, r.url, store.OperatorGrants(r.role))
	pgtest.Exec(t, r.url, fmt.Sprintf("REVOKE INSERT, UPDATE, DELETE ON pgmq.q_%[1]s, pgmq.q_%[1]s_dlq FROM %[2]s", other, r.role))
	svc := newService(t, r.st, ops.Options{})
	rep, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Kind: "charge"}, Limit: 3})
	if err != nil || rep.Retried != 1 || rep.Failed != 2 || !rep.LimitReached {
		t.Fatalf("retry by kind: %+v, %v; want 1 retried, 2 failed, more matching", rep, err)
	}
	if !strings.Contains(rep.FirstError, "lacks a privilege") || !strings.Contains(rep.FirstError, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES") {
		t.Errorf("first_error %q does not say what the role lacks and what to grant", rep.FirstError)
	}
	if kind := ops.ErrorKind(rep.FailureCause()); kind != ops.KindPermission {
		t.Errorf("the cause the failures share: kind %q (%v), want %q", kind, rep.FailureCause(), ops.KindPermission)
	}
	for _, h := range rep.Next {
		if strings.Contains(h.Why, "hints above") {
			t.Errorf("next step %+v points at hints above, of which there are none: %+v", h, rep.Next)
		}
	}
}
