package ops_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// TestQueueDropGivenUpWhileTablesHeld: a confirmed drop whose DLQ another
// session holds past the database call timeout says that nothing was
// dropped, names the session, and says how to end it; it is unavailable,
// not a database that does not answer, and the queue stays.
func TestQueueDropGivenUpWhileTablesHeld(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "held")
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT count(*) FROM `+pgx.Identifier{"pgmq", "q_" + q + "_dlq"}.Sanitize()+`) c`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
	_, err = svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true})
	if err == nil {
		t.Fatal("the drop of a queue whose DLQ another session holds succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"was not dropped", "nothing was dropped", "q_" + q + "_dlq", "AccessShareLock", "pid " + strconv.Itoa(holder), "pg_terminate_backend(" + strconv.Itoa(holder) + ")"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error of the given-up drop lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "did not answer") || ops.ErrorKind(err) != ops.KindUnavailable {
		t.Errorf("the given-up drop is of kind %s, or blames a database that does not answer: %s", ops.ErrorKind(err), msg)
	}
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil {
		t.Errorf("the queue whose drop was given up: %v; want it kept", err)
	}
}
