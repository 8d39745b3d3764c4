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
// did, with its queue; a read cut off has nothing to check; an error of
// kind unavailable from elsewhere names the health check.
func TestNextStepsOfCallsCutOff(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	cancelled, cancel := context.WithCancel(testContext(t))
	cancel()

	_, err := svc.Send(cancelled, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n":1}`)})
	want := `[{"op":"dlq_list","args":{"queue":"` + q + `"},"why":"shows what is dead now, which the call may have moved"},` +
		`{"op":"queue_stats","args":{"queue":"` + q + `"},"why":"shows what is in the queues now, which the call may have changed"}]`
	if !errors.Is(err, context.Canceled) || ops.ErrorKind(err) != ops.KindStopped || stepsJSON(t, ops.NextSteps(err)) != want {
		t.Errorf("a send cut off: %v, kind %s, steps %s; want context.Canceled, kind stopped, steps %s", err, ops.ErrorKind(err), stepsJSON(t, ops.NextSteps(err)), want)
	}
	if unwrapped := errors.Unwrap(err); unwrapped == nil || err.Error() != unwrapped.Error() {
		t.Errorf("a send cut off says %q, want its cause's words, for front ends to word", err)
	}

	_, err = svc.DLQList(cancelled, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
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
