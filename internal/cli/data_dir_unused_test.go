package cli_test

import (
	"strings"
	"testing"
)

// data_dir beside database_url in the configuration file (or
// PGBUS_DATA_DIR beside a URL) uses the URL's database: the embedded
// PostgreSQL does not start, and the log says its data directory is
// unused, rather than pass without a word.
func TestDataDirBesideAURLSaysWhichIsUsed(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	path := writeFile(t, "pgbus.yaml", "database_url: "+d.url+"\ndata_dir: /var/lib/pgbus-unused\n")
	r := pgbus(t, []string{"PGBUS_LOG_FORMAT=json"}, "queues", "--config", path)
	if r.code != 0 || !strings.Contains(r.stderr, "/var/lib/pgbus-unused") || !strings.Contains(r.stderr, "unused") || !strings.Contains(r.stderr, "database_url") {
		t.Errorf("database_url and data_dir in the file: exit %d, stderr %q; want the URL used, and a word that the data directory is unused", r.code, r.stderr)
	}
	r = pgbus(t, []string{"PGBUS_LOG_FORMAT=json", "DATABASE_URL=" + d.url, "PGBUS_DATA_DIR=/var/lib/pgbus-unused"}, "queues")
	if r.code != 0 || !strings.Contains(r.stderr, "PGBUS_DATA_DIR") || !strings.Contains(r.stderr, "unused") {
		t.Errorf("DATABASE_URL and PGBUS_DATA_DIR: exit %d, stderr %q; want a word that the data directory is unused", r.code, r.stderr)
	}
}
