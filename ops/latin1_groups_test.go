package ops_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// On a database in LATIN1, which stores Cyrillic as escapes, two errors
// that say different things in as many letters are two groups, and a
// retry by one group's key moves its messages alone; messages that differ
// by a number are still one group.
func TestNonLatinErrorsGroupApartInLatin1(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewLatin1Database(t))
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	test := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "тест 7 сломан"}, pgtest.DeadSpec{Kind: "k", Message: "тест 8 сломан"})
	harm := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "вред 7 сломан"})
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(sum.Groups) != 2 || sum.Groups[0].Count != 2 || sum.Groups[1].Count != 1 {
		t.Fatalf("summary of %s: %+v, %v; want a group of 2 (тест) and one of 1 (вред)", q, sum.Groups, err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q, Group: sum.Groups[1].Group}})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry of the group of вред: %+v, %v; want 1 retried", r, err)
	}
	if inDLQ(t, s, q, harm[0]) {
		t.Error("the retry of the group of вред left its message")
	}
	for _, id := range test {
		if !inDLQ(t, s, q, id) {
			t.Errorf("the retry of the group of вред moved message %d of тест", id)
		}
	}
}
