package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// A database URL pgx cannot parse is quoted in Open's error without its
// password and without the values of its query but the settings that
// hold no credential, which may be credentials too (options=-c
// app.token=..., a proxy's signature); the error still says what is
// wrong, and is ErrBadURL.
func TestOpenBadURLHidesPasswordAndQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, url, secret, says string
	}{
		{"bad port, signed query", "postgres://app:Zq8PwQ1xyzab@db.internal:bad/app?sig=Zq8SigQ1abcdef", "Zq8SigQ1abcdef", "cannot parse `postgres://app:xxxxx@db.internal:bad/app?[REDACTED]`: invalid port"},
		{"bad port, password", "postgres://app:Zq8PwQ1xyzab@db.internal:bad/app?sig=Zq8SigQ1abcdef", "Zq8PwQ1xyzab", "invalid port"},
		{"bad sslmode, token in options", "postgresql://app@db.internal/app?options=-c%20app.token%3DZq8TokQ1xyz&sslmode=bogus", "Zq8TokQ1xyz", "`postgresql://app@db.internal/app?[REDACTED]&sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{"a value the reason quotes", "postgres://app@db.internal/app?options=Zq8SecretQ1xyz%zz", "Zq8SecretQ1xyz", `invalid percent-encoded token: "[REDACTED]"`},
		{"a pool setting beside a signature", "postgres://app@db.internal/app?sig=Zq8SecretQ1xyz&pool_max_conns=many", "Zq8SecretQ1xyz", "fix the parameter pool_max_conns=many"},
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

// A database URL pgx cannot parse gets advice on what is wrong with it:
// the parameter it could not use named with its value (and the values of
// the other settings kept, those that may hold a credential hidden), and
// what it takes; a scheme other than PostgreSQL's said to be one; the
// advice on writing a password only where the user info is at fault.
// Each got the advice on the password, and the query hidden whole.
func TestOpenBadURLSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	const userinfo = "USER:PASSWORD@HOST"
	for _, c := range []struct {
		name, url string
		says      []string
		not       []string
	}{
		{"pool_max_conns not a number", "postgres://app:Zq8PwQ1xyzab@db.internal:5432/app?sslmode=disable&pool_max_conns=abc",
			[]string{"`postgres://app:xxxxx@db.internal:5432/app?sslmode=disable&pool_max_conns=abc`", `parsing "abc"`, "fix the parameter pool_max_conns=abc", "a whole number"},
			[]string{userinfo, "Zq8PwQ1xyzab"}},
		{"target_session_attrs unknown", "postgres://app@db.internal/app?sslmode=disable&target_session_attrs=bogus",
			[]string{"fix the parameter target_session_attrs=bogus", "read-write"}, []string{userinfo}},
		{"a fragment after sslmode", "postgres://app@db.internal/app?sslmode=disable#frag",
			[]string{"fix the parameter sslmode=disable", "verify-full", "no fragment", "%23"}, []string{userinfo, "#frag"}},
		{"sslrootcert missing", "postgres://app@db.internal/app?sslmode=verify-full&sslrootcert=/nonexistent/root.crt",
			[]string{"sslmode=verify-full&sslrootcert=/nonexistent/root.crt", "fix the parameter sslrootcert=/nonexistent/root.crt", "no such file"}, []string{userinfo}},
		{"another database's scheme", "mysql://app:Zq8PwQ1xyzab@db.internal/app",
			[]string{"its scheme is mysql://, not postgres:// or postgresql://"}, []string{userinfo, "Zq8PwQ1xyzab", "keyword/value pairs"}},
		{"settings kept, secrets hidden", "postgres://app@db.internal/app?application_name=billing&password=Zq8PwQ1xyzab&sslpassword=Zq8KeyQ1xyzab&options=-c%20app.token%3DZq8TokQ1xyzab&connect_timeout=soon",
			[]string{"application_name=billing", "fix the parameter connect_timeout=soon", `parsing "soon"`}, []string{userinfo, "Zq8PwQ1xyzab", "Zq8KeyQ1xyzab", "Zq8TokQ1xyzab"}},
		{"a password's bad escape", "postgres://app:Zq8PwQ1%zz@db.internal/app",
			[]string{"the password cannot be read", userinfo, "%25"}, []string{"Zq8PwQ1"}},
		{"a / in the password", "postgres://app:Zq8Pw/Q1xyzab@db.internal/app",
			[]string{"invalid port", "the password seems to hold a /", "%2F"}, []string{"Zq8Pw", "Q1xyzab"}},
		{"a port that is no number", "postgres://app@db.internal:fivefourthreetwo/app",
			[]string{"invalid port", "give each host's port as a number"}, []string{userinfo}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(context.Background(), c.url)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			msg := err.Error()
			if !errors.Is(err, store.ErrBadURL) || store.IsUnreachable(err) {
				t.Errorf("%v: ErrBadURL %v, unreachable %v; want a bad URL, no server that does not answer", err, errors.Is(err, store.ErrBadURL), store.IsUnreachable(err))
			}
			for _, w := range c.says {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\nwant it to say %q", msg, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(msg, w) {
					t.Errorf("error %q\nsays %q", msg, w)
				}
			}
		})
	}
}
