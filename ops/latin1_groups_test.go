package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
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

// On a database in LATIN1, an error text in letters the encoding lacks
// is stored as escapes (\u0442...), which keep its groups apart; the
// summary, the list and the view of its dead message show it in its own
// letters, its group's key as it was, and a filter by the class shown
// finds it. An escape the text itself held, of a letter LATIN1 has, stays.
func TestNonLatinErrorsShownDecodedInLatin1(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewLatin1Database(t))
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Class: "Ошибка", Message: `тест 7 сломан: café \u0041`})
	stored := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`_dlq" WHERE headers::text LIKE '%\\u0442%'`)
	if stored != 1 {
		t.Fatalf("%d dead messages hold the escapes of the error text; want it stored escaped", stored)
	}
	want := `тест 7 сломан: café \u0041`
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary of %s: %+v, %v", q, sum.Groups, err)
	}
	g := sum.Groups[0]
	if g.ErrorMessage != want || g.ErrorClass != "Ошибка" || !strings.HasPrefix(g.ErrorPattern, "тест <n> сломан") {
		t.Errorf("summary's group: class %q, message %q, pattern %q; want them in their own letters", g.ErrorClass, g.ErrorMessage, g.ErrorPattern)
	}
	again, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, ErrorClass: g.ErrorClass, Group: g.Group}})
	if err != nil || len(again.Groups) != 1 || again.Groups[0].Group != g.Group {
		t.Errorf("summary by the class and key shown: %+v, %v; want the group again, its key unchanged", again.Groups, err)
	}
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 10})
	if err != nil || len(list.Items) != 1 || list.Items[0].ErrorMessage != want || list.Items[0].ErrorClass != "Ошибка" {
		t.Errorf("list of %s: %+v, %v; want the error in its own letters", q, list.Items, err)
	}
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	if err != nil || m.DeadLetter == nil || m.DeadLetter.ErrorMessage != want || m.DeadLetter.ErrorClass != "Ошибка" ||
		len(m.History) == 0 || m.History[0].ErrorMessage != want {
		t.Errorf("view of message %d: %+v, %v; want the error in its own letters", ids[0], m, err)
	}
}

// End to end on a database in LATIN1: a worker's job fails for good with
// a Cyrillic error, sent through the service; its dead message's
// summary, list and view say the error in its own letters.
func TestWorkerErrorInLatin1ShownDecoded(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewLatin1Database(t))
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		return engine.NonRetryable(errors.New("заказ 42 отклонён"))
	})
	pgtest.Start(t, c)
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"order": 42}`)}); err != nil {
		t.Fatal(err)
	}
	var item ops.DeadItem
	pgtest.Eventually(t, time.Minute, "the message in the DLQ", func() bool {
		page, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
		if err != nil || len(page.Items) != 1 {
			return false
		}
		item = page.Items[0]
		return true
	})
	if item.ErrorMessage != "заказ 42 отклонён" {
		t.Errorf("listed error %q; want it in its own letters", item.ErrorMessage)
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(sum.Groups) != 1 || sum.Groups[0].ErrorPattern != "заказ <n> отклонён" {
		t.Errorf("summary: %+v, %v; want the pattern in its own letters", sum.Groups, err)
	}
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: item.MsgID})
	if err != nil || m.DeadLetter == nil || m.DeadLetter.ErrorMessage != "заказ 42 отклонён" {
		t.Errorf("view: %+v, %v; want the error in its own letters", m.DeadLetter, err)
	}
}
