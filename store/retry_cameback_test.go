package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A retry counts the messages it moves (in a dry run: would move) that
// had been retried out of a DLQ before and died again, by filter and by
// ids; a message that died once, or whose count is not a number, is not
// counted.
func TestRetryCountsMessagesThatCameBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "once"},
		pgtest.DeadSpec{Kind: "back", Headers: `{"pgbus_kind": "back", "pgbus_dlq_retries": 1}`},
		pgtest.DeadSpec{Kind: "back", Headers: `{"pgbus_kind": "back", "pgbus_dlq_retries": 4}`},
		pgtest.DeadSpec{Kind: "odd", Headers: `{"pgbus_kind": "odd", "pgbus_dlq_retries": "often"}`})
	dry, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 4 || dry.CameBack != 2 {
		t.Fatalf("dry run by filter = %d retried, %d came back, %v; want 4 and 2", dry.Retried, dry.CameBack, err)
	}
	rep, err := s.RetryDead(ctx, q, ids[:2], store.RetryOptions{})
	if err != nil || rep.Retried != 2 || rep.CameBack != 1 {
		t.Fatalf("retry of ids %v = %d retried, %d came back, %v; want 2 and 1", ids[:2], rep.Retried, rep.CameBack, err)
	}
}
