package ops

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A migration refused as read-only (a standby, or a transaction read-only
// by setting) is refused again when run again: its error gives no
// migration as its next step, as it does for a setting that cut it short.
func TestMigrationRefusedAsReadOnlyGivesNoMigrateStep(t *testing.T) {
	t.Parallel()
	readOnly := ExplainMigration(&pgconn.PgError{Code: "25006", Message: "cannot execute CREATE TABLE in a read-only transaction"}, "pgbus")
	if !errors.Is(readOnly, ErrReadOnly) || len(NextSteps(readOnly)) != 0 {
		t.Errorf("read-only migration: %v, read-only %v, next steps %+v; want read-only and none", readOnly, errors.Is(readOnly, ErrReadOnly), NextSteps(readOnly))
	}
	cut := ExplainMigration(&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}, "pgbus")
	if next := NextSteps(cut); len(next) != 1 || next[0].Op != OpMigrate {
		t.Errorf("migration cut by statement_timeout: next steps %+v; want the migration again", next)
	}
}
