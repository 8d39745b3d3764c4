package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// originalMarker is in the original payload only, never in the corrected
// one, so it shows whether the history quotes the original.
const originalMarker = "orig-3f9a7c"

// The history record of a retry with a corrected payload quotes the
// original payload, and the payload gate applies to it as to the payload
// itself: shown only when the service allows payloads and the call asks,
// in the view of the live message and of the dead one alike.
func TestReplacedPayloadInHistoryIsGated(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Payload: `{"sku": "` + originalMarker + `", "amount": "ten"}`})
	writer := newService(t, s, ops.Options{AllowPayloads: true})
	r, err := writer.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"sku": "fixed", "amount": 10}`)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry with a corrected payload = %+v, %v", r, err)
	}
	live := r.Outcomes[0].NewMsgID
	for _, c := range []struct{ allow, ask bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		page, err := newService(t, s, ops.Options{AllowPayloads: c.allow}).QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: c.ask})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("live messages of %s = %+v, %v", q, page, err)
		}
		checkReplacedRecord(t, fmt.Sprintf("live message (allow %v, ask %v)", c.allow, c.ask), page.Items[0].History, c.allow && c.ask)
	}

	// Dead again, the message carries the record into its DLQ.
	moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{{MsgID: live, Reason: store.ReasonNonRetryable, MaxRetries: 5,
		Failure: &store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "still failing"}}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter %d again: %v, %v", live, moved, err)
	}
	for _, c := range []struct{ allow, ask bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		m, err := newService(t, s, ops.Options{AllowPayloads: c.allow}).DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: moved[0].DLQMsgID, IncludePayload: c.ask})
		if err != nil {
			t.Fatal(err)
		}
		checkReplacedRecord(t, fmt.Sprintf("dead message (allow %v, ask %v)", c.allow, c.ask), m.History, c.allow && c.ask)
	}
}

// checkReplacedRecord fails unless history holds the record of the
// replaced payload, quoting the original exactly when shown says so.
func checkReplacedRecord(t *testing.T, what string, history []ops.Failure, shown bool) {
	t.Helper()
	for _, f := range history {
		if f.ErrorClass != store.PayloadReplacedClass {
			continue
		}
		quoted := strings.Contains(f.ErrorMessage, originalMarker)
		if quoted != shown || (!shown && !strings.Contains(f.ErrorMessage, "hidden")) {
			t.Errorf("%s: the replacement record reads %q; want the original payload quoted: %v", what, f.ErrorMessage, shown)
		}
		return
	}
	t.Errorf("%s: no %s record in its history %+v", what, store.PayloadReplacedClass, history)
}

// A corrected payload of JSON null is a correction like any other: the
// message runs with null, not with the payload that failed.
func TestRetryWithANullPayload(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Payload: `{"sku": "` + originalMarker + `"}`})
	r, err := newService(t, s, ops.Options{}).DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`null`)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry with a null payload = %+v, %v", r, err)
	}
	if got := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = 'null'::jsonb`); got != 1 {
		t.Fatalf("the retried message's payload is not null (%d with null)", got)
	}
}
