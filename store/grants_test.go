package store_test

import (
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// DeadLetterGrants names, of the tables a dead letter writes, those the
// role lacks privileges on, with the privileges, the role, and the owner
// who may grant them; nothing once granted.
func TestDeadLetterGrantsNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	url, owner := newMigratedDatabase(t)
	ctx := testContext(t)
	q := newQueue(t, owner)
	dlq := store.DLQName(q)
	var ownerRole string
	if err := owner.Pool().QueryRow(ctx, `SELECT quote_ident(current_user::text)`).Scan(&ownerRole); err != nil {
		t.Fatal(err)
	}
	role, roleURL := operatorRole(t, url)
	pgtest.Exec(t, url, "REVOKE INSERT, DELETE ON pgmq.q_"+dlq+" FROM "+role+"; REVOKE UPDATE ON pgbus.failures FROM "+role)
	s := openStore(t, roleURL)
	got, err := s.DeadLetterGrants(ctx, q, dlq)
	want := []store.MissingGrant{
		{Table: "pgmq.q_" + dlq, Owner: ownerRole, Role: role, Privileges: []string{"INSERT", "DELETE"}},
		{Table: "pgbus.failures", Owner: ownerRole, Role: role, Privileges: []string{"UPDATE"}},
	}
	if err != nil || !slices.EqualFunc(got, want, func(a, b store.MissingGrant) bool {
		return a.Table == b.Table && a.Owner == b.Owner && a.Role == b.Role && slices.Equal(a.Privileges, b.Privileges)
	}) {
		t.Fatalf("DeadLetterGrants = %+v, %v; want %+v", got, err, want)
	}
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.q_"+dlq+", pgbus.failures TO "+role)
	if got, err := s.DeadLetterGrants(ctx, q, dlq); err != nil || len(got) != 0 {
		t.Fatalf("DeadLetterGrants once granted = %+v, %v; want nothing", got, err)
	}
}
