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
