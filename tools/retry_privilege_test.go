package tools_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// pgbus_dlq_retry by filter, on a server whose role may read but not move
// a queue's dead messages, fails as the same call by ids does: a tool
// error of kind permission naming the grants, rather than a result of 0
// retried whose first_error is the database's raw words. Nothing moves.
func TestRetryByFilterRefusedAPrivilegeIsAnError(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := newQueue(t, owner)
	ids := pgtest.DeadLetter(t, owner, q, pgtest.DeadSpec{Kind: "charge"}, pgtest.DeadSpec{Kind: "charge"}, pgtest.DeadSpec{Kind: "charge"})
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, store.OperatorGrants(role))
	pgtest.Exec(t, url, "REVOKE INSERT, UPDATE, DELETE ON pgmq.q_"+q+", pgmq.q_"+q+"_dlq FROM "+role)
	pool, err := pgxpool.New(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	t.Cleanup(st.Close)
	e := newEnvOn(t, st, ops.Options{})
	grant := `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "` + role + `"`
	for _, args := range []map[string]any{
		{"queue": q, "kind": "charge", "limit": 2},
		{"queue": q, "ids": ids[:2]},
	} {
		text := e.callErr(t, "pgbus_dlq_retry", args, "lacks a privilege", grant)
		if strings.Contains(text, "hints above") {
			t.Errorf("%v: %s", args, text)
		}
		if m := e.metaOf(t, "pgbus_dlq_retry", args); m.Kind != ops.KindPermission {
			t.Errorf("%v: kind %q, want %q", args, m.Kind, ops.KindPermission)
		}
	}
	if n := pgtest.Live(t, owner, q+"_dlq"); n != 3 {
		t.Fatalf("the DLQ holds %d, want 3", n)
	}
}
