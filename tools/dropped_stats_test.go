package tools_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The stats of every queue, while one was dropped outside pgbus with dead
// messages left, pass the tool's output schema, as a strict client checks
// it: the dropped queue's settings are those it gets when created again,
// not empty values the schema refuses, which failed the whole call.
func TestStatsOfAllWithADroppedQueue(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	ctx := testContext(t)
	if err := e.st.CreateQueue(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	pgtest.DeadLetterN(t, e.st, "orphan", 1, pgtest.DeadSpec{})
	pgtest.DropOutside(t, e.st, "orphan")
	for _, args := range []map[string]any{{}, {"queue": "orphan"}} {
		out := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", args)
		var dropped *ops.QueueStats
		for i := range out.Queues {
			if out.Queues[i].Queue == "orphan" {
				dropped = &out.Queues[i]
			}
		}
		if dropped == nil || !dropped.Dropped || dropped.DLQDepth != 1 {
			t.Fatalf("stats %v: %+v; want orphan dropped with its dead message", args, out.Queues)
		}
		def := store.DefaultQueueSettings("orphan").Plain()
		if dropped.Settings.BackoffStrategy != def.BackoffStrategy || dropped.Settings.OnSuccess != def.OnSuccess || dropped.Settings.MaxRetries != def.MaxRetries {
			t.Errorf("stats %v: the dropped queue's settings %+v; want those it gets when created again, %+v", args, dropped.Settings, def)
		}
	}
}
