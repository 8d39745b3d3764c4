package ops_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// On a host whose clock is three hours ahead of the database server's,
// "dead-lettered in the last two hours" means on the server's clock: the
// messages that died a moment ago are listed, their age a moment, not
// none with no word of why. (The server's clock is set back here, which
// is the same.)
func TestAgesAreOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	q := newQueue(t, st, nil)
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "k"})
	svc := newService(t, st, ops.Options{})
	page, err := svc.DLQList(testContext(t), ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Since: "2h"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 3 {
		t.Fatalf("dead-lettered in the last 2h: %d messages, want the 3 that died a moment ago on the server's clock", len(page.Items))
	}
	if d := time.Since(page.Items[0].DeadLetteredAt); d < 2*time.Hour || d > 4*time.Hour {
		t.Errorf("dead-lettered %s before this clock; want the server's time, 3 hours behind it", d)
	}
}

// A send whose deadline is a duration from now (send --deadline 1h) takes
// it from the database server's clock, on which workers judge it, not
// from the sending host's: on a host three hours ahead it would have been
// two hours past already.
func TestDeadlineFromNowIsOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	q := newQueue(t, st, nil)
	svc := newService(t, st, ops.Options{})
	sent, err := svc.Send(testContext(t), ops.SendRequest{Queue: q, Payload: []byte(`{}`), DeadlineIn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var left time.Duration
	var us int64
	if err := st.Pool().QueryRow(testContext(t), `SELECT (extract(epoch FROM (headers->>'pgbus_deadline')::timestamptz - now()) * 1e6)::bigint
		FROM pgmq."q_`+q+`" WHERE msg_id = $1`, sent.MsgID).Scan(&us); err != nil {
		t.Fatal(err)
	}
	left = time.Duration(us) * time.Microsecond
	if left < 50*time.Minute || left > time.Hour {
		t.Errorf("the deadline is %s after the server's now; want an hour", left)
	}
	if _, err := svc.Send(testContext(t), ops.SendRequest{Queue: q, Payload: []byte(`{}`), DeadlineIn: time.Hour, Deadline: time.Now()}); err == nil {
		t.Error("a send given a deadline both as a time and as a duration was taken")
	}
}
