package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// askFirst returns the question err of the first call of a deferred
// confirmation holds, failing unless it holds one.
func askFirst(t *testing.T, err error) *ops.Question {
	t.Helper()
	var q *ops.Question
	if !errors.As(err, &q) || q.State == "" {
		t.Fatalf("first call = %v; want a question with a state", err)
	}
	return q
}

// With Deferred, a discard by filter asks over two calls: the first moves
// nothing, records nothing and returns the question; the second takes the
// answer only with the state of that question, for the same call, by the
// same principal, within AnswerWithin: declined, nothing moves and the
// audit log says so; accepted, the set asked about moves. A purge too.
func TestDeferredConfirmation(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	now := time.Now()
	svc := newService(t, s, ops.Options{Now: func() time.Time { return now }})
	client := uniqueName("agent")
	ctx := ops.WithClient(testContext(t), client)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "BadInput"})
	req := ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q, ErrorClass: "BadInput"}, Limit: 10, Deferred: &ops.Deferred{}}

	_, err := svc.DLQDiscard(ctx, req)
	question := askFirst(t, err)
	if !strings.Contains(question.Text, "Discard 2 dead messages of the DLQ of "+q) || pgtest.Live(t, s, q+"_dlq") != 2 || len(auditRows(t, s, client)) != 0 {
		t.Fatalf("question %q; want one naming the 2 messages, nothing moved and nothing audited", question.Text)
	}
	answer := func(r ops.DLQDiscardRequest, state string, yes bool) (ops.DLQDiscard, error) {
		r.Deferred = &ops.Deferred{Answered: true, State: state, Yes: yes}
		return svc.DLQDiscard(ctx, r)
	}
	d, err := answer(req, question.State, false)
	if err != nil || !d.Declined || pgtest.Live(t, s, q+"_dlq") != 2 {
		t.Fatalf("declined = %+v, %v; want declined and nothing moved", d, err)
	}
	other := req
	other.Limit = 1
	if _, err = answer(other, question.State, true); !errors.Is(err, ops.ErrNotAsked) || !strings.Contains(err.Error(), "arguments differ") {
		t.Fatalf("an answer for other arguments = %v; want ErrNotAsked", err)
	}
	if _, err = svc.DLQDiscard(ops.WithCaller(ctx, ops.Caller{Client: client, Principal: "token sha256:00000000"}),
		ops.DLQDiscardRequest{Filter: req.Filter, Limit: 10, Deferred: &ops.Deferred{Answered: true, State: question.State, Yes: true}}); !errors.Is(err, ops.ErrNotAsked) {
		t.Fatalf("an answer brought by another principal = %v; want ErrNotAsked", err)
	}
	now = now.Add(ops.AnswerWithin + time.Minute)
	if _, err = answer(req, question.State, true); !errors.Is(err, ops.ErrNotAsked) || !strings.Contains(err.Error(), "later than") {
		t.Fatalf("a late answer = %v; want ErrNotAsked saying it came too late", err)
	}
	if pgtest.Live(t, s, q+"_dlq") != 2 {
		t.Fatal("a refused answer moved messages")
	}
	_, err = svc.DLQDiscard(ctx, req)
	d, err = answer(req, askFirst(t, err).State, true)
	if err != nil || d.Declined || d.Discarded != 2 || pgtest.Live(t, s, q+"_dlq") != 0 || pgtest.Archived(t, s, q+"_dlq") != 2 {
		t.Fatalf("accepted = %+v, %v; want the 2 discarded", d, err)
	}
	rows := auditRows(t, s, client)
	if len(rows) != 5 || !strings.Contains(rows[0].Result, `"declined": true`) || !strings.Contains(rows[0].Arguments, `"asked": true`) || !rows[1].IsError || rows[4].IsError {
		t.Fatalf("audit rows = %+v; want the declined call, the 3 refused answers and the discard, and no question", rows)
	}

	purge := ops.DLQPurgeRequest{Queue: q, Deferred: &ops.Deferred{}}
	_, err = svc.DLQPurge(ctx, purge)
	pq := askFirst(t, err)
	if _, err = answer(req, pq.State, true); !errors.Is(err, ops.ErrNotAsked) {
		t.Fatalf("a purge's answer brought to a discard = %v; want ErrNotAsked", err)
	}
	purge.Deferred = &ops.Deferred{Answered: true, State: pq.State, Yes: true}
	if p, err := svc.DLQPurge(ctx, purge); err != nil || p.Purged != 2 || pgtest.Archived(t, s, q+"_dlq") != 0 {
		t.Fatalf("accepted purge = %+v, %v; want the 2 purged", p, err)
	}
}
