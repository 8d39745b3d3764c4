package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// rawDead writes a row into queue's DLQ as another client would: no
// dead-letter block, so its group's key names no source queue.
func rawDead(t *testing.T, s *store.Store, queue, payload string) int64 {
	t.Helper()
	var id int64
	err := s.Pool().QueryRow(testContext(t), `INSERT INTO pgmq."q_`+queue+`_dlq" (vt, message) VALUES (clock_timestamp(), $1) RETURNING msg_id`, payload).Scan(&id)
	if err != nil {
		t.Fatalf("insert into the DLQ of %s: %v", queue, err)
	}
	return id
}

// A group's key is the same in two DLQs when it names no source queue
// (rows written by another client): a retry or discard by that key alone
// would move both groups, though the key was copied from one. It is refused
// until the queue is given, and moves nothing; with the queue, only that
// DLQ's group moves.
func TestGroupInSeveralDLQs(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	a, b := newQueue(t, s, nil), newQueue(t, s, nil)
	idA, idB := rawDead(t, s, a, `{"job_class":"RubyJob"}`), rawDead(t, s, b, `{"job_class":"RubyJob"}`)

	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Kind: "RubyJob"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Groups) != 2 || sum.Groups[0].Group != sum.Groups[1].Group {
		t.Fatalf("want two groups with one key, one per DLQ: %+v", sum.Groups)
	}
	key := sum.Groups[0].Group

	for name, call := range map[string]func() error{
		"retry": func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Group: key}})
			return err
		},
		"discard": func() error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Group: key}, Confirm: true})
			return err
		},
		"retry dry run": func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Group: key}, DryRun: true})
			return err
		},
	} {
		err := call()
		var oe *ops.Error
		if !errors.Is(err, ops.ErrInvalid) || !errors.As(err, &oe) {
			t.Fatalf("%s by a key in two DLQs: want an invalid-argument error, got %v", name, err)
		}
		for _, want := range []string{a + "_dlq", b + "_dlq", "queue"} {
			if !strings.Contains(oe.Msg, want) {
				t.Errorf("%s: the error should name %q: %s", name, want, oe.Msg)
			}
		}
		if len(oe.Hints) != 2 || oe.Hints[0].Args["queue"] == oe.Hints[1].Args["queue"] {
			t.Errorf("%s: want one hint per DLQ, each with its queue: %+v", name, oe.Hints)
		}
		if !inDLQ(t, s, a, idA) || !inDLQ(t, s, b, idB) {
			t.Fatalf("%s: a refused call moved a message", name)
		}
	}

	rep, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Group: key, Queue: a}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Retried != 1 || inDLQ(t, s, a, idA) || !inDLQ(t, s, b, idB) {
		t.Fatalf("with the queue, only its DLQ's message should move: retried %d, in %s: %v, in %s: %v",
			rep.Retried, a, inDLQ(t, s, a, idA), b, inDLQ(t, s, b, idB))
	}
	// Now the key is in one DLQ only, and names its group without the queue.
	res, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Group: key}, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Discarded != 1 || inDLQ(t, s, b, idB) {
		t.Fatalf("the key in one DLQ should discard its message: discarded %d", res.Discarded)
	}
}
