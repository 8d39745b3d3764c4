package cli_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A --database-url in keyword/value form (host=... password=...) is
// carried into next steps with its password hidden, as a URL's is: it was
// printed in clear in every next:, more: and see line, quoted password
// included.
func TestKeywordValueURLCarriedWithoutItsPassword(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "a"}, pgtest.DeadSpec{Kind: "a"})
	u, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Query().Get("host")
	if host == "" {
		host = u.Hostname()
	}
	base := "host=" + host + " port=" + u.Port() + " user=" + u.User.Username() + " dbname=" + strings.TrimPrefix(u.Path, "/") + " sslmode=disable"
	if u.Port() == "" {
		base = strings.Replace(base, " port=", "", 1)
	}
	for _, pw := range []string{"password=Zq8Pw$$w0rd", `password='Zq8 Pw\'s$$w0rd'`} {
		dsn := base + " " + pw
		for _, args := range [][]string{
			{"dlq", "summary"},
			{"dlq", "list", "--limit", "1"},
			{"dlq", "show", "999999", "--queue", "orders"},
		} {
			r := pgbus(t, nil, append(args, "--database-url", dsn)...)
			out := r.stdout + r.stderr
			if strings.Contains(out, "Zq8") || !strings.Contains(out, "password=[REDACTED]") {
				t.Errorf("%s with %s: exit %d\n%s\nwant the password hidden as password=[REDACTED]", strings.Join(args, " "), pw, r.code, out)
			}
		}
	}
}

// A next step copied as printed, its URL's secrets hidden as [REDACTED],
// is refused before it connects, saying to fill them in: it failed to log
// in, the error naming DATABASE_URL and not the marker.
func TestCopiedURLWithItsSecretHiddenSaysToFillItIn(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"postgres://ops:[REDACTED]@127.0.0.1:1/app", "host=127.0.0.1 port=1 password=[REDACTED]"} {
		r := pgbus(t, nil, "dlq", "list", "--database-url", url)
		if r.code != 2 || !strings.Contains(r.stderr, "holds [REDACTED] where pgbus hid a value") || !strings.Contains(r.stderr, "put the real value in its place") {
			t.Errorf("dlq list --database-url %q: exit %d, %q; want exit 2 saying to fill in what was hidden", url, r.code, r.stderr)
		}
	}
}

// A connection's advice names the URL as it was given: by --database-url,
// it said to check DATABASE_URL, which the command did not read.
func TestConnectAdviceNamesTheFlagGiven(t *testing.T) {
	t.Parallel()
	r := pgbus(t, nil, "queues", "--database-url", "postgres://u@127.0.0.1:1/app")
	if r.code != 1 || !strings.Contains(r.stderr, "--database-url's host and port are right") || strings.Contains(r.stderr, "DATABASE_URL") {
		t.Fatalf("queues with --database-url of a server that is not there: exit %d, %q; want advice naming --database-url", r.code, r.stderr)
	}
	r = pgbus(t, []string{"DATABASE_URL=postgres://u@127.0.0.1:1/app"}, "queues")
	if !strings.Contains(r.stderr, "DATABASE_URL's host and port are right") {
		t.Fatalf("queues with DATABASE_URL of a server that is not there: %q; want advice naming DATABASE_URL", r.stderr)
	}
}
