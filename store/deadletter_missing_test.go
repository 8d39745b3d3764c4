package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A dead-lettering that finds a table missing says which: a queue's, or
// pgbus's failure history, which a dropped pgbus schema takes with it and
// a migration makes again; not "one of the two queues does not exist"
// while both do.
func TestDeadLetterNamesTheMissingTable(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // its tables are dropped
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids, err := s.SendBatch(ctx, q, msgs(2))
	if err != nil {
		t.Fatal(err)
	}
	item := func(id int64) []store.DeadLetterItem {
		return []store.DeadLetterItem{{MsgID: id, Reason: store.ReasonNonRetryable, MaxRetries: 3,
			Failure: &store.Failure{Attempt: 1, ErrorClass: "Boom", ErrorMessage: "boom"}}}
	}

	exec(t, s, `DROP TABLE pgbus.failures CASCADE`)
	_, err = s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, item(ids[0]))
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), "pgbus.failures") || strings.Contains(err.Error(), "one of the two queues") {
		t.Fatalf("dead-letter without pgbus.failures = %v; want ErrSchemaMissing naming pgbus.failures", err)
	}

	exec(t, s, `DROP TABLE pgmq."q_`+dlq+`"`)
	_, err = s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, item(ids[1]))
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "one of the two queues does not exist") {
		t.Fatalf("dead-letter without its DLQ = %v; want ErrNotFound saying a queue is missing", err)
	}
	if n := pgtest.Live(t, s, q); n != 2 {
		t.Fatalf("%d messages left in %s after the failed dead-letterings; want both", n, q)
	}
}
