package pgtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// LostClaimKind is the kind of the message DeadAfterLostClaim sends.
const LostClaimKind = "lost_claim"

// LostClaim takes message msgID of queue, which must be the one message
// visible there, as a worker's read takes it (the store's read, which
// counts it in read_ct) with a visibility timeout of a millisecond, and
// waits until it is visible again: a claim that committed but whose
// worker never ran the job (its reply lost on the way, its process
// killed), once its visibility timeout has run out.
func LostClaim(tb testing.TB, s *store.Store, queue string, msgID int64) {
	tb.Helper()
	got, err := s.Read(Context(tb), queue, time.Millisecond, 1)
	if err != nil || len(got) != 1 || got[0].ID != msgID {
		tb.Fatalf("pgtest: take message %d of %s as a lost claim: read %v, %v", msgID, queue, got, err)
	}
	Eventually(tb, time.Minute, "the lost claim of message "+queue+" to run out", func() bool {
		return Int(tb, s, `SELECT count(*) FROM pgmq."q_`+queue+`" WHERE msg_id = $1 AND vt <= clock_timestamp()`, msgID) == 1
	})
}

// DeadAfterLostClaim gives queue max_retries 3 (the rest of FastSettings),
// sends it a message of kind LostClaimKind, loses the claim of its first
// read (LostClaim), then has a worker fail each attempt after it until the
// message is dead-lettered: attempts 2 and 3 are recorded, attempt 1 is
// not. It returns the message's id in queue and in queue's DLQ.
func DeadAfterLostClaim(tb testing.TB, s *store.Store, queue string) (id, dlqID int64) {
	tb.Helper()
	SetFastSettings(tb, s, queue, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	id = SendLostClaimKind(tb, s, queue)
	LostClaim(tb, s, queue, id)
	return id, FailUntilDead(tb, s, queue, id)
}

// SendLostClaimKind sends queue a message of kind LostClaimKind and
// returns its id.
func SendLostClaimKind(tb testing.TB, s *store.Store, queue string) int64 {
	tb.Helper()
	id, err := s.Send(Context(tb), queue, store.NewMessage{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind": "` + LostClaimKind + `"}`)})
	if err != nil {
		tb.Fatalf("pgtest: send to %s: %v", queue, err)
	}
	return id
}

// FailUntilDead runs a worker of queue whose handler of LostClaimKind
// fails every attempt, until message id of queue is dead-lettered; it
// returns its id in queue's DLQ.
func FailUntilDead(tb testing.TB, s *store.Store, queue string, id int64) int64 {
	tb.Helper()
	c := NewClient(tb, s, queue, nil)
	c.Handle(LostClaimKind, func(context.Context, *engine.Job) error { return errors.New("downstream refused the call") })
	stop := Start(tb, c)
	defer stop()
	dlq := store.DLQName(queue)
	var dlqID int64
	Eventually(tb, time.Minute, "message "+queue+" to be dead-lettered", func() bool {
		err := s.Pool().QueryRow(Context(tb), `SELECT msg_id FROM pgmq."q_`+dlq+`"
			WHERE (headers->'pgbus_dead_letter'->>'source_msg_id')::bigint = $1`, id).Scan(&dlqID)
		return err == nil
	})
	return dlqID
}

// RetryingAfterLostClaim sends queue a message of kind LostClaimKind,
// loses the claim of its first read (LostClaim), takes it again and
// records its second attempt's failure, with a retry an hour away: a
// retrying message whose first attempt left no outcome. It returns the
// message's id.
func RetryingAfterLostClaim(tb testing.TB, s *store.Store, queue string) int64 {
	tb.Helper()
	ctx := Context(tb)
	id := SendLostClaimKind(tb, s, queue)
	LostClaim(tb, s, queue, id)
	got, err := s.Read(ctx, queue, time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != id || got[0].ReadCount != 2 {
		tb.Fatalf("pgtest: the second read of message %d of %s: %+v, %v; want it, read twice", id, queue, got, err)
	}
	fail := store.Failure{Attempt: 2, Kind: LostClaimKind, ErrorClass: "net.OpError", ErrorMessage: "connection refused"}
	if ids, err := s.RetryMany(ctx, queue, []store.RetryItem{{MsgID: id, Delay: time.Hour, Failure: fail, ReadCount: 2, EnqueuedAt: got[0].EnqueuedAt}}); err != nil || len(ids) != 1 {
		tb.Fatalf("pgtest: record the failure of message %d of %s: %v, %v", id, queue, ids, err)
	}
	return id
}
