package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvPGMQScript names the variable that points tests at PGMQ's SQL
// installation script; without it they look for
// ../shared/fixtures/pgmq-1.5.1.sql from the repository's root.
const EnvPGMQScript = "PGBUS_PGMQ_SCRIPT"

// PGMQScriptPath returns the path of PGMQ's SQL installation script for
// tests. It fails the test, naming the path looked at, when the script is
// absent: a skipped test would count as a pass of what it never checked.
func PGMQScriptPath(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv(EnvPGMQScript)
	if path == "" {
		root, err := repoRoot()
		if err != nil {
			tb.Fatalf("pgtest: find the repository's root: %v", err)
		}
		path = filepath.Join(root, "..", "shared", "fixtures", "pgmq-1.5.1.sql")
	}
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("PGMQ's SQL installation script is not at %s (%v): put PGMQ 1.5.1's pgmq.sql (pgmq-extension/sql/pgmq.sql of its release) there, or set %s to its path", path, err, EnvPGMQScript)
	}
	return path
}

// PGMQScript returns the text of PGMQ's SQL installation script, failing
// the test when it is absent (PGMQScriptPath).
func PGMQScript(tb testing.TB) string {
	tb.Helper()
	path := PGMQScriptPath(tb)
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("pgtest: read PGMQ's script: %v", err)
	}
	return string(b)
}

// RunSQL runs sql, any number of statements, on the database at dbURL as
// one implicit transaction, as psql -1 -f would, and returns its error.
func RunSQL(tb testing.TB, dbURL, sql string) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// repoRoot walks up from the working directory, a package's directory in
// go test, to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
