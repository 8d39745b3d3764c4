package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// A database URL pgx cannot parse is quoted in Open's error without its
// password and without the values of its query, which may be credentials
// too (options=-c app.token=..., a proxy's signature); the error still
// says what is wrong, and is ErrBadURL.
func TestOpenBadURLHidesPasswordAndQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, url, secret, says string
	}{
		{"bad port, signed query", "postgres://app:Zq8PwQ1xyzab@db.internal:bad/app?sig=Zq8SigQ1abcdef", "Zq8SigQ1abcdef", "cannot parse `postgres://app:xxxxx@db.internal:bad/app?[REDACTED]`: invalid port"},
		{"bad port, password", "postgres://app:Zq8PwQ1xyzab@db.internal:bad/app?sig=Zq8SigQ1abcdef", "Zq8PwQ1xyzab", "invalid port"},
		{"bad sslmode, token in options", "postgresql://app@db.internal/app?options=-c%20app.token%3DZq8TokQ1xyz&sslmode=bogus", "Zq8TokQ1xyz", "`postgresql://app@db.internal/app?[REDACTED]`: failed to configure TLS (sslmode is invalid)"},
		{"a value the reason quotes", "postgres://app@db.internal/app?connect_timeout=Zq8SecretQ1xyz", "Zq8SecretQ1xyz", `invalid connect_timeout (strconv.ParseInt: parsing "[REDACTED]": invalid syntax)`},
		{"a pool setting", "postgres://app@db.internal/app?pool_max_conns=Zq8SecretQ1xyz", "Zq8SecretQ1xyz", "cannot parse pool_max_conns"},
		{"a user name holding a ?", "postgres://?:Zq8SecretQ1xyz/@host/db?x", "Zq8SecretQ1xyz", "missing key/value separator"},
		{"a query parameter without =", "postgres://app@db.internal/app?Zq8SecretQ1xyz", "Zq8SecretQ1xyz", "missing key/value separator"},
		{"keyword/value, a quoted password never closed", "host=db.internal port=5432 password='kv Zq8SecretQ1xyz xx", "Zq8SecretQ1xyz", "unterminated quoted string"},
		{"keyword/value, a quoted password with blanks", "host=db.internal port=bad password='kv Zq8SecretQ1xyz xx'", "Zq8SecretQ1xyz", "invalid port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(context.Background(), c.url)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, store.ErrBadURL) {
				t.Errorf("not ErrBadURL: %v", err)
			}
			if msg := err.Error(); strings.Contains(msg, c.secret) || !strings.Contains(msg, c.says) || !strings.Contains(msg, "parse database URL") {
				t.Errorf("error %q\nwant it to say %q, without %q", msg, c.says, c.secret)
			}
		})
	}
}
