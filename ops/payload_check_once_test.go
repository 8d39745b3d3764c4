package ops_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A retry with a corrected payload, a dry run or not, checks the payload
// as the database reads it once.
func TestCorrectedPayloadCheckedOnce(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	counted, checks := pgtest.CountingStore(t, pgtest.URL(t), "::text::jsonb IS NULL") // store.CheckCorrectedPayload's
	svc := newService(t, counted, ops.Options{})
	q := newQueue(t, s, nil)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: `{"n":1}`})[0]
	for _, dry := range []bool{true, false} {
		checks.Store(0)
		out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"n":2}`), DryRun: dry})
		if err != nil || out.Retried != 1 {
			t.Fatalf("retry (dry run %v) = %+v, %v; want it retried", dry, out, err)
		}
		if n := checks.Load(); n != 1 {
			t.Errorf("retry (dry run %v) checked the corrected payload %d times; want once", dry, n)
		}
	}
}
