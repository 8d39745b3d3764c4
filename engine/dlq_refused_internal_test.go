package engine

import (
	"testing"

	"github.com/pgbus/pgbus/store"
)

// The advice groups the grants by the owner who may make them, and adds
// the default privileges only for the owner of a queue's table, the role
// that creates queues.
func TestGrantAdviceByOwner(t *testing.T) {
	t.Parallel()
	got := grantAdvice([]store.MissingGrant{
		{Table: "pgmq.q_orders_dlq", Owner: "app", Role: "operator", Privileges: []string{"SELECT", "INSERT"}},
		{Table: "pgbus.failures", Owner: "admin", Role: "operator", Privileges: []string{"UPDATE"}},
	})
	want := "run as app: GRANT SELECT, INSERT ON pgmq.q_orders_dlq TO operator; " +
		"ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO operator (so that the queues it creates later are covered); " +
		"run as admin: GRANT UPDATE ON pgbus.failures TO operator"
	if got != want {
		t.Fatalf("grantAdvice =\n%s\nwant\n%s", got, want)
	}
}
