package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// stepsJSON is hints as JSON, to compare them whole.
func stepsJSON(t *testing.T, hints []ops.Hint) string {
	t.Helper()
	b, err := json.Marshal(hints)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A write cut off before it finished names the lists that show what it
// may have changed, with its queue, and no other; a read cut off has
// nothing to check; an error of
// kind unavailable from elsewhere names the health check.
func TestNextStepsOfCallsCutOff(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	cancelled, cancel := context.WithCancel(testContext(t))
	cancel()

	dead := `{"op":"dlq_list","args":{"queue":"` + q + `"},"why":"shows what is dead now, which the call may have moved"}`
	live := `{"op":"queue_stats","args":{"queue":"` + q + `"},"why":"shows what is in the queues now, which the call may have changed"}`
	discarded := `{"op":"dlq_discarded","args":{"queue":"` + q + `"},"why":"shows what is discarded now, which the call may have changed"}`
	deadAll := `{"op":"dlq_list","why":"shows what is dead now, which the call may have moved"}`
	// A call on one id shows that message: still dead, or where it went.
	one := `{"op":"dlq_show","args":{"msg_id":1,"queue":"` + q + `"},"why":"shows whether the message is still dead, or where the call moved it"}`
	oneAnywhere := `{"op":"dlq_show","args":{"msg_id":1},"why":"shows whether the message is still dead, or where the call moved it"}`
	// Each write names the lists of what it may have changed, and no other.
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"a send", func() error {
			_, err := svc.Send(cancelled, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n":1}`)})
			return err
		}, "[" + live + "]"},
		{"a retry", func() error {
			_, err := svc.DLQRetry(cancelled, ops.DLQRetryRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Queue: q}})
			return err
		}, "[" + one + "," + live + "]"},
		{"a retry of two ids", func() error {
			_, err := svc.DLQRetry(cancelled, ops.DLQRetryRequest{IDs: []int64{1, 2}, Filter: ops.DeadFilter{Queue: q}})
			return err
		}, "[" + dead + "," + live + "]"},
		{"a discard", func() error {
			_, err := svc.DLQDiscard(cancelled, ops.DLQDiscardRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Queue: q}})
			return err
		}, "[" + one + "," + discarded + "]"},
		{"a discard in every DLQ", func() error {
			_, err := svc.DLQDiscard(cancelled, ops.DLQDiscardRequest{IDs: []int64{1, 2}})
			return err
		}, "[" + deadAll + "]"},
		{"a discard of one id in every DLQ", func() error {
			_, err := svc.DLQDiscard(cancelled, ops.DLQDiscardRequest{IDs: []int64{1}})
			return err
		}, "[" + oneAnywhere + "]"},
		{"a restore", func() error {
			_, err := svc.DLQRestore(cancelled, ops.DLQRestoreRequest{IDs: []int64{1}, Queue: q})
			return err
		}, "[" + dead + "," + discarded + "]"},
		{"a pause", func() error {
			_, err := svc.QueuePause(cancelled, ops.QueueRequest{Queue: q})
			return err
		}, "[" + live + "]"},
		{"a circuit reset", func() error {
			_, err := svc.CircuitReset(cancelled, ops.CircuitResetRequest{Name: "payments"})
			return err
		}, `[{"op":"circuits","args":{"name":"payments"},"why":"shows the breaker's state now, which the call may have changed"}]`},
	} {
		err := c.call()
		if !errors.Is(err, context.Canceled) || ops.ErrorKind(err) != ops.KindStopped || stepsJSON(t, ops.NextSteps(err)) != c.want {
			t.Errorf("%s cut off: %v, kind %s, steps %s; want context.Canceled, kind stopped, steps %s", c.name, err, ops.ErrorKind(err), stepsJSON(t, ops.NextSteps(err)), c.want)
		}
		if unwrapped := errors.Unwrap(err); unwrapped == nil || err.Error() != unwrapped.Error() {
			t.Errorf("%s cut off says %q, want its cause's words, for front ends to word", c.name, err)
		}
	}

	_, err := svc.DLQList(cancelled, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if !errors.Is(err, context.Canceled) || len(ops.NextSteps(err)) != 0 {
		t.Errorf("a list cut off: %v, steps %s; want context.Canceled and no step", err, stepsJSON(t, ops.NextSteps(err)))
	}

	if got := stepsJSON(t, ops.NextSteps(ops.ErrUnavailable)); got != `[{"op":"health","why":"says whether the database answers again"}]` {
		t.Errorf("steps of ErrUnavailable: %s, want the health check", got)
	}
	if steps := ops.NextSteps(nil); steps != nil {
		t.Errorf("steps of no error: %+v", steps)
	}
}
