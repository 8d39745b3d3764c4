package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewRole creates a role that may log in with a password and nothing else,
// and returns its name and the URL that connects to dbURL's database as it.
// Grant it what the test needs through dbURL. When the test ends its
// privileges in that database are revoked and the role is dropped, before
// the database itself when it came from NewDatabase earlier in the test.
func NewRole(tb testing.TB, dbURL string) (name, roleURL string) {
	tb.Helper()
	name = Name("pgbus_role")
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	password := hex.EncodeToString(b)
	Exec(tb, dbURL, "CREATE ROLE "+name+" LOGIN PASSWORD '"+password+"'")
	tb.Cleanup(func() {
		Exec(tb, dbURL, "DROP OWNED BY "+name)
		Exec(tb, dbURL, "DROP ROLE "+name)
	})
	return name, withUser(tb, dbURL, name, password)
}

// Exec runs sql on the database at dbURL, failing the test on error.
func Exec(tb testing.TB, dbURL, sql string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		tb.Fatalf("pgtest: connect to run %q: %v", sql, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("pgtest: %s: %v (the test server's user must be allowed to create roles)", sql, err)
	}
}

// withUser returns base with its user and password replaced; it accepts URLs
// and key=value connection strings.
func withUser(tb testing.TB, base, user, password string) string {
	return editConnString(tb, base, "user="+user+" password="+password, func(u *url.URL) {
		u.User = url.UserPassword(user, password)
	})
}
