package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A send whose deadline comes before its delay ends is refused, as one
// whose deadline has passed is: the message would be dead-lettered when it
// became due, without running. Nothing is written.
func TestSendRefusesADeadlineBeforeItsDelayEnds(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	req := ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`), Delay: 2 * time.Hour, Deadline: time.Now().Add(time.Hour)}
	if _, err := svc.Send(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "before the delay") {
		t.Fatalf("send with a 2h delay and a deadline in 1h: %v; want ErrInvalid saying the deadline comes first", err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("queue %s holds %d messages after the refused send; want none", q, n)
	}
	req.Deadline = time.Now().Add(3 * time.Hour)
	if _, err := svc.Send(ctx, req); err != nil {
		t.Fatalf("send with a 2h delay and a deadline in 3h: %v", err)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Fatalf("queue %s holds %d messages; want the one sent", q, n)
	}
}
