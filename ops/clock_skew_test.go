package ops_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
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

// A retry out of a DLQ judges a message's deadline on the database
// server's clock, on which a worker would judge it, not on this host's:
// with the server two hours ahead, a message whose deadline passed an
// hour ago on the server's clock (an hour ahead on this one) is left in
// the DLQ, by id, by filter and in dry runs, saying it passed an hour
// ago; with the server two hours behind, one whose deadline is an hour
// ahead on the server's clock (an hour past on this one) is retried.
func TestRetryJudgesDeadlinesOnTheServersClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		skew   string
		offset time.Duration // of the deadline from the server's now
		passed bool
	}{
		{skew: "+2h", offset: -time.Hour, passed: true},
		{skew: "-2h", offset: time.Hour, passed: false},
	} {
		t.Run(tc.skew, func(t *testing.T) {
			t.Parallel()
			st := pgtest.SkewedStore(t, tc.skew)
			ctx := testContext(t)
			var server time.Time
			if err := st.Pool().QueryRow(ctx, `SELECT now()`).Scan(&server); err != nil {
				t.Fatal(err)
			}
			deadline := server.Add(tc.offset).UTC().Format(time.RFC3339Nano)
			q := newQueue(t, st, nil)
			ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Message: "boom",
				Headers: `{"pgbus_kind": "k", "pgbus_deadline": "` + deadline + `"}`})
			svc := newService(t, st, ops.Options{})
			for _, req := range []ops.DLQRetryRequest{
				{IDs: ids, Filter: ops.DeadFilter{Queue: q}, DryRun: true},
				{Filter: ops.DeadFilter{Queue: q}, Limit: 10, DryRun: true},
				{IDs: ids, Filter: ops.DeadFilter{Queue: q}},
				{Filter: ops.DeadFilter{Queue: q}, Limit: 10},
			} {
				r, err := svc.DLQRetry(ctx, req)
				if !tc.passed {
					if req.Limit > 0 && !req.DryRun {
						continue // retried already, by id
					}
					if err != nil || r.Retried != 1 || r.DeadlinesPassed != 0 {
						t.Errorf("retry %+v of a message whose deadline is an hour ahead on the server's clock: retried %d, %d deadlines passed, first error %q, %v; want it retried",
							req, r.Retried, r.DeadlinesPassed, r.FirstError, err)
					}
					continue
				}
				if err != nil || r.Retried != 0 || r.DeadlinesPassed != 1 || !passedAbout(r.FirstError, time.Hour) {
					t.Errorf("retry %+v of a message whose deadline passed an hour ago on the server's clock: retried %d, %d deadlines passed, first error %q, %v; want it left, saying it passed an hour ago",
						req, r.Retried, r.DeadlinesPassed, r.FirstError, err)
				}
			}
			want := 1
			if !tc.passed {
				want = 0
			}
			if n := pgtest.Live(t, st, store.DLQName(q)); n != want {
				t.Errorf("%d messages left in the DLQ; want %d", n, want)
			}
		})
	}
}

// passedAbout tells whether text says a deadline "passed D ago", D within
// a minute of want.
func passedAbout(text string, want time.Duration) bool {
	m := regexp.MustCompile(`passed (\S+) ago`).FindStringSubmatch(text)
	if m == nil {
		return false
	}
	d, err := time.ParseDuration(m[1])
	return err == nil && (d-want).Abs() < time.Minute
}
