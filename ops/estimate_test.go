package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// payloads returns n messages with empty objects for payloads.
func payloads(n int) []store.NewMessage {
	out := make([]store.NewMessage, n)
	for i := range out {
		out[i] = store.NewMessage{Payload: json.RawMessage(`{}`)}
	}
	return out
}

// A queue too large to count at each read is shown with estimated counts,
// and says so: its stats, the health check's backlog and reasons, and the
// confirmation a drop asks for.
func TestEstimatedCountsSaySo(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	if _, err := s.SendBatch(ctx, q, payloads(12)); err != nil {
		t.Fatal(err)
	}
	pgtest.SettleRowStats(t, s, "pgmq.q_"+q)
	s.SetExactCountLimit(10)

	st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil || len(st.Queues) != 1 || !st.Queues[0].CountsEstimated || st.Queues[0].Visible != 12 {
		t.Fatalf("stats = %+v, %v; want 12 ready, estimated", st, err)
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := reasonOf(h, "no_workers", q); !h.BacklogEstimated || r == nil || !strings.Contains(r.Message, ": about 12 messages ready, 0 waiting to retry;") {
		t.Fatalf("health = %+v; want an estimated backlog and a no_workers reason saying about 12 messages", h)
	}
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "deletes about 12 live messages") {
		t.Fatalf("drop without confirm = %v; want it to say it deletes about 12 live messages", err)
	}
	dropped, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true})
	if err != nil || dropped.Live != 12 || !dropped.Estimated {
		t.Fatalf("drop = %+v, %v; want 12 live, estimated", dropped, err)
	}

	// Within the limit the counts are exact and say nothing of estimates.
	exact := newQueue(t, s, nil)
	if _, err := s.SendBatch(ctx, exact, payloads(3)); err != nil {
		t.Fatal(err)
	}
	if st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: exact}); err != nil || len(st.Queues) != 1 || st.Queues[0].CountsEstimated || st.Queues[0].Visible != 3 {
		t.Fatalf("stats of a small queue = %+v, %v; want 3 ready, exact", st, err)
	}
}
