package tools_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A tool that reads a DLQ whose table another session holds locked
// answers, once its read waited its short bound for the lock and long
// before the call's, a tool error of kind unavailable naming the table,
// the session and what to do, with the same call again as its next step
// and no health check (the database answers).
func TestToolReadingALockedDLQSaysWhoHoldsTheLock(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	q := newQueue(t, st)
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	// A call bound no test waits out: a read that waited for the lock
	// that long would fail by the test's own deadline.
	e := newEnvOn(t, st, ops.Options{DatabaseCallTimeout: 10 * time.Minute})
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q+"_dlq")

	args := map[string]any{"queue": q}
	e.callErr(t, "pgbus_dlq_list", args,
		"waited "+ops.DefaultReadLockWait.String()+" for a lock another session holds",
		fmt.Sprintf("pgmq.q_%s_dlq in AccessExclusiveLock by pid %d", q, lock.PID),
		fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID), "pg_stat_activity")
	m := e.metaOf(t, "pgbus_dlq_list", args)
	if m.Kind != ops.KindUnavailable {
		t.Errorf("pgbus_dlq_list of a DLQ held locked: kind %q; want %q", m.Kind, ops.KindUnavailable)
	}
	for _, n := range m.Next {
		if n.Tool == "pgbus_health" {
			t.Errorf("pgbus_dlq_list of a DLQ held locked: next %+v holds the health check, which would say OK", m.Next)
		}
	}
	// Its next step is what its text says: the same call, again.
	if len(m.Next) != 1 || m.Next[0].Tool != "pgbus_dlq_list" || m.Next[0].Arguments["queue"] != q {
		t.Errorf("pgbus_dlq_list of a DLQ held locked: next %+v; want the same call again", m.Next)
	}

	lock.Release()
	callOK[map[string]any](t, e, "pgbus_dlq_list", args)
}
