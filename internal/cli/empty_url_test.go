package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
)

// An empty DATABASE_URL, or an empty database_url in the file, stops the
// command before anything starts, as an empty --database-url does: read as
// no URL, it started the embedded PostgreSQL, so a deploy whose secret or
// template variable came through empty sent its jobs to a database of its
// own.
func TestEmptyDatabaseURLFromEnvOrFileStartsNothing(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	file := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(file, []byte("log_level: info\ndatabase_url: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"environment", []string{"DATABASE_URL=", "PGBUS_DATA_DIR=" + dataDir}, nil, "environment variable DATABASE_URL is set but empty"},
		{"environment blank", []string{"DATABASE_URL=  ", "PGBUS_DATA_DIR=" + dataDir}, nil, "environment variable DATABASE_URL is set but empty"},
		{"file", []string{"PGBUS_DATA_DIR=" + dataDir}, []string{"--config", file}, file + ":2: database_url: is empty"},
		// So is an empty configuration path: the queues' settings and
		// handlers would be left out.
		{"configuration path", []string{"PGBUS_CONFIG=", "PGBUS_DATA_DIR=" + dataDir}, nil, "environment variable PGBUS_CONFIG is set but empty"},
	} {
		r := pgbus(t, c.env, append([]string{"queue", "create", "lost"}, c.args...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", c.name, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Fatalf("data directory holds %v (%v); want nothing started", entries, err)
	}
	// Given on the command line, the URL is taken and the empty variable
	// is not in the way.
	if r := pgbus(t, []string{"DATABASE_URL="}, "migrate", "--database-url", newDB(t).url); r.code != 0 {
		t.Errorf("--database-url beside an empty DATABASE_URL: exit %d, %s", r.code, r.stderr)
	}
}

// --no-embedded (PGBUS_NO_EMBEDDED, no_embedded in the file) turns a
// missing database URL into an error before anything starts: a deploy
// whose URL went missing altogether would otherwise work a database of
// its own, healthy and empty. With a URL it changes nothing.
func TestNoEmbeddedRefusesToStartOne(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	file := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(file, []byte("no_embedded: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PGBUS_DATA_DIR=" + dataDir}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"flag", env, []string{"--no-embedded"}, "the embedded PostgreSQL is turned off: set DATABASE_URL"},
		{"environment", append([]string{"PGBUS_NO_EMBEDDED=1"}, env...), nil, "turned off (from environment variable PGBUS_NO_EMBEDDED): set DATABASE_URL"},
		{"file", env, []string{"--config", file}, "turned off (from config " + file + "): set DATABASE_URL"},
		{"not a boolean", append([]string{"PGBUS_NO_EMBEDDED=sometimes"}, env...), nil, `PGBUS_NO_EMBEDDED="sometimes": not a boolean`},
	} {
		for _, cmd := range [][]string{{"queue", "create", "lost"}, {"migrate"}, {"dlq", "list"}} {
			r := pgbus(t, c.env, append(cmd, c.args...)...)
			if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s, %s: exit %d, stderr %q; want exit %d saying %q", c.name, cmd[0], r.code, r.stderr, cli.ExitUsage, c.want)
			}
		}
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Fatalf("data directory holds %v (%v); want nothing started", entries, err)
	}
	db := newDB(t)
	if r := pgbus(t, append([]string{"PGBUS_NO_EMBEDDED=1", "DATABASE_URL=" + db.url}, env...), "queue", "create", "kept"); r.code != 0 || !strings.Contains(r.stdout, "kept") {
		t.Fatalf("PGBUS_NO_EMBEDDED=1 with DATABASE_URL: exit %d, stdout %q, stderr %q; want the queue created", r.code, r.stdout, r.stderr)
	}
	if r := pgbus(t, []string{"PGBUS_NO_EMBEDDED=1", "DATABASE_URL=" + db.url}, "queues", "--json"); !strings.Contains(r.stdout, `"kept"`) {
		t.Errorf("queues after the create: %q; want kept listed", r.stdout)
	}
}
