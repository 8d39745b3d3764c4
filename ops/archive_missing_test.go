package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A DLQ whose archive table was dropped or renamed by hand is said so,
// with the queue's creation, which makes it again, as a next step each
// front end words: the message names no front end's command.
func TestArchiveMissingGivesTheCreationAsAStep(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st := testStore(t)
	q := newQueue(t, st, nil)
	dlq := store.DLQName(q)
	pgtest.Exec(t, pgtest.URL(t), `ALTER TABLE pgmq."a_`+dlq+`" RENAME TO "a_`+dlq+`_old"`)
	_, err := newService(t, st, ops.Options{}).DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}})
	var oe *ops.Error
	if !errors.As(err, &oe) || !errors.Is(err, ops.ErrNotFound) || !strings.Contains(oe.Msg, "has no archive table (pgmq.a_"+dlq) ||
		strings.Contains(oe.Msg, "pgbus queue") || !hasHint(ops.NextSteps(err), ops.OpQueueCreate, map[string]any{"queue": q}) {
		t.Fatalf("discarded messages of a DLQ without its archive table: %v (next %+v); want it said, with the queue's creation as a step", err, ops.NextSteps(err))
	}
}
