package store_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// CountDeadByClass counts every dead message by DLQ, error class and
// reason, the same from the group counts as read message by message, and
// with a filter that reads the messages.
func TestCountDeadByClass(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	a, b := newQueue(t, s), newQueue(t, s)
	pgtest.DeadLetterN(t, s, a, 3, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Message: "timed out after 30s"})
	pgtest.DeadLetterN(t, s, a, 1, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Message: "timed out after 5s"})
	pgtest.DeadLetterN(t, s, b, 2, pgtest.DeadSpec{Kind: "j", Class: "net.Timeout", Reason: store.ReasonNonRetryable, Message: "x"})
	pgtest.DeadLetterN(t, s, b, 1, pgtest.DeadSpec{Kind: "j", Class: "db.Deadlock", Message: "y"})
	da, db := store.DLQName(a), store.DLQName(b)
	want := []store.DeadClassCount{
		{DLQ: da, ErrorClass: "net.Timeout", Reason: store.ReasonMaxRetriesExceeded, Count: 4},
		{DLQ: db, ErrorClass: "db.Deadlock", Reason: store.ReasonMaxRetriesExceeded, Count: 1},
		{DLQ: db, ErrorClass: "net.Timeout", Reason: store.ReasonNonRetryable, Count: 2},
	}
	slices.SortFunc(want, func(x, y store.DeadClassCount) int {
		return cmp.Or(strings.Compare(x.DLQ, y.DLQ), strings.Compare(x.ErrorClass, y.ErrorClass))
	})
	first := func(class string) []store.DeadClassCount {
		return slices.DeleteFunc(slices.Clone(want), func(c store.DeadClassCount) bool { return c.ErrorClass != class })
	}
	for name, c := range map[string]struct {
		ctx  bool
		f    store.DeadFilter
		want []store.DeadClassCount
	}{
		"counts":     {false, store.DeadFilter{}, want},
		"scan":       {true, store.DeadFilter{}, want},
		"kind":       {false, store.DeadFilter{Kind: "j"}, slices.DeleteFunc(slices.Clone(want), func(c store.DeadClassCount) bool { return c.DLQ != db })},
		"text":       {false, store.DeadFilter{Text: "timed out"}, slices.DeleteFunc(first("net.Timeout"), func(c store.DeadClassCount) bool { return c.DLQ != da })},
		"one reason": {false, store.DeadFilter{Reason: store.ReasonNonRetryable}, slices.DeleteFunc(first("net.Timeout"), func(c store.DeadClassCount) bool { return c.DLQ != db })},
	} {
		cx := ctx
		if c.ctx {
			cx = store.ForceSummaryScan(ctx)
		}
		got, err := s.CountDeadByClass(cx, c.f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v\nwant %v", name, got, c.want)
		}
	}
}
