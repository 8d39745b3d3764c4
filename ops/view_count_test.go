package ops_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A secret in the original payload that a retry replaced, quoted in the
// history, is counted once among the values shown as [REDACTED]: as
// many as the view shows.
func TestReplacedPayloadSecretCountedOnce(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: `{"password": "hunter2-Zq9xW", "n": 1}`})
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"n": 2}`)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
	}
	moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: r.Outcomes[0].NewMsgID, Reason: store.ReasonNonRetryable, MaxRetries: 5,
		Failure: &store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "still failing"}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter again = %v, %v", moved, err)
	}
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: moved[0].DLQMsgID, IncludePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, f := range m.History {
		shown += strings.Count(f.ErrorMessage, ops.Redacted)
	}
	if shown != 1 || m.RedactedValues != shown {
		t.Errorf("the history shows %d [REDACTED], redacted_values = %d; want 1 and 1", shown, m.RedactedValues)
	}
}
