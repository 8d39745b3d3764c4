package dbopen_test

import (
	"context"

	"testing"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// The sessions of a process carry its program and command as their
// application_name, for pg_stat_activity, unless the URL names its own,
// which is kept: by Connect and by Dial alike.
func TestSessionsNameTheCommand(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	url := pgtest.NewDatabase(t)
	for _, c := range []struct {
		name, url, want string
		open            func(context.Context, dbopen.Options) (*dbopen.DB, error)
	}{
		{"connect", url, "pgbus dlq retry", dbopen.Connect},
		{"dial", url, "pgbus dlq retry", dbopen.Dial},
		{"own name", pgtest.WithParam(t, url, "application_name", "billing"), "billing", dbopen.Connect},
	} {
		db, err := c.open(ctx, dbopen.Options{URL: c.url, ApplicationName: "pgbus dlq retry"})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = db.Pool().QueryRow(ctx, `SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&got)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: the session's application_name is %q; want %q", c.name, got, c.want)
		}
	}
}
