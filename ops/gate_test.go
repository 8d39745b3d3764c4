package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// While a process tries again to ready a schema it could not (missing,
// out of its role's reach), its calls keep saying why the last try
// failed, and the migration to run: each new try held them saying only
// that it readied the schema, "started while it could not connect",
// with no next step, for as long as the try took. After a failure to
// connect, a try that connected says it readies the schema, as before.
func TestGateKeepsTheSchemasFailureWhileItTriesAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	g := ops.NewGate()
	svc := newService(t, s, ops.Options{Gate: g})
	ctx := testContext(t)
	failed := fmt.Errorf("the database has no pgbus schema (this pgbus needs schema version 30): %w", store.ErrSchemaMissing)

	g.Hold(failed)
	g.Hold(nil) // the next try connected, and readies the schema again
	_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: "orders"})
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), failed.Error()) || !hasOp(ops.NextSteps(err), ops.OpMigrate) {
		t.Errorf("a call while the schema is tried again: %v (next %+v)\nwant the last failure, %q, and the migration as a step", err, ops.NextSteps(err), failed)
	}

	g.Hold(&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"})
	g.Hold(nil)
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: "orders"}); !errors.Is(err, ops.ErrSchemaNotReady) || !strings.Contains(err.Error(), "is readying its pgbus schema") {
		t.Errorf("a call once the database answers after failing to connect: %v; want it to say the schema is being readied", err)
	}
}

// hasOp reports whether steps holds a step of op.
func hasOp(steps []ops.Hint, op string) bool {
	for _, h := range steps {
		if h.Op == op {
			return true
		}
	}
	return false
}
