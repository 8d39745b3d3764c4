package cli

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestOpsSchemaAdviceReadsOnce: an operation on a database pgbus migrate
// never ran on answers with the versions and the hint to migrate, which
// the command line renders once, as its next command, and not a second
// time as it renders the schema check's errors.
func TestOpsSchemaAdviceReadsOnce(t *testing.T) {
	ctx := pgtest.Context(t)
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.DLQList(ctx, ops.DLQListRequest{})
	line := (&app{}).errorLine((&app{}).explain(err), "")
	if !strings.Contains(line, "needs schema version") || !strings.HasSuffix(line, ": see pgbus migrate") || strings.Count(line, "pgbus migrate") != 1 {
		t.Fatalf("the command line renders %q; want the versions and one \": see pgbus migrate\"", line)
	}
}

// TestSchemaWithoutPGMQRendersItsInstallation: the schema check of a
// database whose PGMQ tables are gone from under a pgbus schema renders
// the migration that installs PGMQ from its script as the next command,
// which the store's message leaves to the front ends.
func TestSchemaWithoutPGMQRendersItsInstallation(t *testing.T) {
	ctx := pgtest.Context(t)
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	pgtest.Exec(t, url, "DROP SCHEMA pgmq CASCADE")
	_, err := st.CheckSchema(ctx)
	line := (&app{}).errorLine((&app{}).explain(err), "")
	if !strings.Contains(line, "pg_restore --schema pgmq") || !strings.HasSuffix(line, ": see pgbus migrate --install-pgmq PGMQ_SQL") || strings.Count(line, "pgbus migrate") != 1 {
		t.Fatalf("the command line renders %q; want the restore and one \": see pgbus migrate --install-pgmq PGMQ_SQL\"", line)
	}
}
