package ops_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The ALTER ROLE a refusal advises names the role pgbus connects as the
// way SQL needs it: run as printed, it changes that role's setting, where
// a role "Svc" written bare is svc, another role, and a name holding a
// quote is a syntax error.
func TestReadOnlyAdviceRunsAsPrintedForAnyRoleName(t *testing.T) {
	t.Parallel()
	for _, role := range []string{"Svc", `We"ird Rôle ü`} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			dbURL := pgtest.NewDatabase(t)
			owner := pgtest.OpenStore(t, dbURL)
			q := newQueue(t, owner, nil)
			ident := pgx.Identifier{role}.Sanitize()
			pgtest.Exec(t, dbURL, "CREATE ROLE "+ident+" LOGIN PASSWORD 'pw'")
			t.Cleanup(func() {
				pgtest.Exec(t, dbURL, "DROP OWNED BY "+ident)
				pgtest.Exec(t, dbURL, "DROP ROLE "+ident)
			})
			pgtest.Exec(t, dbURL, store.OperatorGrants(role))
			pgtest.Exec(t, dbURL, "ALTER ROLE "+ident+" SET default_transaction_read_only = on")
			u, err := url.Parse(dbURL)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(role, "pw")
			send := func() error {
				st, err := store.Open(ctx, u.String())
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				_, err = newService(t, st, ops.Options{}).Send(ctx, ops.SendRequest{Queue: q, Payload: []byte(`{}`)})
				return err
			}
			err = send()
			if err == nil {
				t.Fatal("a send as a role whose transactions are read-only worked")
			}
			alter := regexp.MustCompile(`ALTER ROLE .* SET default_transaction_read_only = off`).FindString(err.Error())
			if alter == "" {
				t.Fatalf("the refused send %q gives no ALTER ROLE", err)
			}
			pgtest.Exec(t, dbURL, alter)
			if err := send(); err != nil {
				t.Fatalf("a send after %s, as advised: %v", alter, err)
			}
			if !strings.Contains(alter, ident) {
				t.Errorf("the advice %q does not name the role as %s", alter, ident)
			}
		})
	}
}
