package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
)

// The file's database_url takes ${NAME}, as its handlers' url and headers
// do: it was sent as written, and the server refused a password
// "${...}" in words that never said why. The variable is needed only
// when the file's URL is the one used.
func TestConfigDatabaseURLFromVariable(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	file := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(file, []byte("log_level: info\ndatabase_url: ${PGBUS_TEST_APP_DATABASE_URL}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := pgbus(t, []string{"PGBUS_TEST_APP_DATABASE_URL=" + d.url}, "migrate", "--config", file); r.code != 0 {
		t.Fatalf("the file's URL from its variable: exit %d, %s", r.code, r.stderr)
	}
	r := pgbus(t, []string{"PGBUS_NO_EMBEDDED=1"}, "queues", "--config", file)
	want := file + ":2: database_url: uses ${PGBUS_TEST_APP_DATABASE_URL}, but the environment variable PGBUS_TEST_APP_DATABASE_URL is not set"
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("its variable unset: exit %d, stderr %q; want exit %d saying %q", r.code, r.stderr, cli.ExitUsage, want)
	}
	if r := pgbus(t, d.env, "queues", "--config", file); r.code != 0 {
		t.Errorf("DATABASE_URL beside the file's URL, its variable unset: exit %d, %s", r.code, r.stderr)
	}
}

// A database URL the file gives that cannot be used is named with the
// file, its line and key, as the flag and DATABASE_URL name themselves in
// the same errors: "the database URL" left which of them to look at.
func TestConfigDatabaseURLNamedInItsErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "pgbus.yaml")
	for _, c := range []struct {
		name, url string
		code      int
	}{
		{"refused", "postgres://app:Zq8PwQ1xyzab@127.0.0.1:1/app?connect_timeout=5", cli.ExitFailure},
		{"unreadable", "postgres://app:Zq8PwQ1xyzab@127.0.0.1:notaport/app", cli.ExitUsage},
	} {
		if err := os.WriteFile(file, []byte("log_level: info\ndatabase_url: "+c.url+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := pgbus(t, nil, "queues", "--config", file)
		want := "pgbus: config " + file + ":2: database_url: "
		if r.code != c.code || !strings.HasPrefix(r.stderr, want) || strings.Contains(r.stderr, "Zq8") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d starting %q, without the password", c.name, r.code, r.stderr, c.code, want)
		}
	}
}
