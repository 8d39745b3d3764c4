package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// holdTest is a queue whose messages a test reads one at a time.
type holdTest struct {
	t *testing.T
	s *store.Store
	q string
}

// readSent sends a message and reads it, checking the read got it.
func (h holdTest) readSent(m store.NewMessage) store.Message {
	h.t.Helper()
	ctx := testContext(h.t)
	if m.Payload == nil {
		m.Payload = json.RawMessage(`{}`)
	}
	id, err := h.s.Send(ctx, h.q, m)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.readID(id)
}

// readID reads the one visible message, which must be id.
func (h holdTest) readID(id int64) store.Message {
	h.t.Helper()
	got, err := h.s.Read(testContext(h.t), h.q, time.Hour, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		h.t.Fatalf("read of %s = %+v, %v; want message %d", h.q, got, err, id)
	}
	return got[0]
}

// snooze snoozes the read m for delay, as breaker does when not empty.
func (h holdTest) snooze(m store.Message, delay time.Duration, breaker string) {
	h.t.Helper()
	item := store.SnoozeItem{MsgID: m.ID, Delay: delay, Breaker: breaker, ReadCount: m.ReadCount, EnqueuedAt: m.EnqueuedAt}
	if got, err := h.s.SnoozeMany(testContext(h.t), h.q, []store.SnoozeItem{item}); err != nil || len(got) != 1 {
		h.t.Fatalf("snooze of message %d = %v, %v", m.ID, got, err)
	}
}

// live is the queue's live messages by id.
func (h holdTest) live() map[int64]store.LiveMessage {
	h.t.Helper()
	page, err := h.s.ListLive(testContext(h.t), store.LiveFilter{Queue: h.q}, "", 100)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[int64]store.LiveMessage{}
	for _, m := range page.Items {
		out[m.MsgID] = m
	}
	return out
}

// A job an open breaker snoozed is held by it: scheduled (not retrying,
// though its last attempt failed), named in held_by, counted as
// scheduled, left alone by run-now, and made visible by RunHeldNow of its
// breaker alone, the mark taken off; a handler's own snooze, a delayed
// send, a message in flight, one another breaker holds and one read since
// its snooze by a reader that left the mark keep their times.
func TestBreakerHoldRunsOnlyHeldMessages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	pay, other := pgtest.Name("pay"), pgtest.Name("other")

	first := h.readSent(store.NewMessage{}) // held before any failure
	h.snooze(first, 5*time.Minute, pay)

	failed := h.readSent(store.NewMessage{}) // held after a failed attempt
	if _, err := s.RetryMany(ctx, h.q, []store.RetryItem{{MsgID: failed.ID, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "503"}}}); err != nil {
		t.Fatal(err)
	}
	h.snooze(h.readID(failed.ID), 5*time.Minute, pay)

	own := h.readSent(store.NewMessage{}) // the handler's own snooze
	h.snooze(own, time.Hour, "")
	otherHeld := h.readSent(store.NewMessage{Headers: json.RawMessage(`{"pgbus_kind":"mail"}`)})
	h.snooze(otherHeld, 5*time.Minute, other)
	readSince := h.readSent(store.NewMessage{})
	h.snooze(readSince, 5*time.Minute, pay)
	// A reader that knows nothing of the mark (pgmq.read) counts a read.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+h.q+`" SET read_ct = read_ct + 1, vt = now() + interval '1 hour' WHERE msg_id = $1`, readSince.ID); err != nil {
		t.Fatal(err)
	}
	delayed, err := s.Send(ctx, h.q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := h.readSent(store.NewMessage{})

	live := h.live()
	for id, want := range map[int64]string{first.ID: pay, failed.ID: pay, otherHeld.ID: other} {
		if m := live[id]; m.State != store.StateScheduled || m.HeldBy != want {
			t.Errorf("message %d held by %s: state %q, held by %q", id, want, m.State, m.HeldBy)
		}
	}
	for _, id := range []int64{own.ID, readSince.ID, delayed, inFlight.ID} {
		if live[id].HeldBy != "" {
			t.Errorf("message %d is shown held by %q; no breaker holds it", id, live[id].HeldBy)
		}
	}
	if live[readSince.ID].State != store.StateInFlight {
		t.Errorf("message read since its snooze is %q, want in_flight", live[readSince.ID].State)
	}
	_, stats := liveStates(t, s, h.q)
	if stats.Scheduled != 5 || stats.WaitingRetry != 0 {
		t.Errorf("stats: scheduled %d, retrying %d; want 5 (three held, a snooze, a delayed send) and 0", stats.Scheduled, stats.WaitingRetry)
	}
	if n, err := s.RunNow(ctx, h.q, store.RunNowOptions{DryRun: true}); err != nil || n != 0 {
		t.Errorf("run-now dry run = %d, %v; a held message is no retry to run now", n, err)
	}

	for _, b := range []string{pay, other} {
		if err := s.RecordBreakerUsers(ctx, b, []store.BreakerUser{{Queue: h.q}, {Queue: h.q, Kind: "mail"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Other tests' breakers share the database: only these two are known.
	if held, err := s.HeldByBreaker(ctx, ""); err != nil || held[pay] != 2 || held[other] != 1 {
		t.Fatalf("HeldByBreaker of all = %v, %v; want 2 held by %s, 1 by %s", held, err, pay, other)
	}
	if held, err := s.HeldByBreaker(ctx, other); err != nil || len(held) != 1 || held[other] != 1 {
		t.Fatalf("HeldByBreaker(%s) = %v, %v; want its 1 alone", other, held, err)
	}
	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n != 2 {
		t.Fatalf("RunHeldNow(%s) = %d, %v; want the 2 it held", pay, n, err)
	}
	if held, err := s.HeldByBreaker(ctx, ""); err != nil || held[pay] != 0 || held[other] != 1 {
		t.Fatalf("HeldByBreaker after RunHeldNow(%s) = %v, %v; want only %s's 1", pay, held, err, other)
	}
	live = h.live()
	for _, id := range []int64{first.ID, failed.ID} {
		m := live[id]
		var headers map[string]any
		_ = json.Unmarshal(m.Headers, &headers)
		if _, marked := headers[store.HeaderBreakerHold]; m.State != store.StateWaiting || m.HeldBy != "" || marked {
			t.Errorf("message %d after RunHeldNow: state %q, held by %q, headers %s; want waiting, the mark gone", id, m.State, m.HeldBy, m.Headers)
		}
	}
	want := map[int64]string{own.ID: store.StateScheduled, otherHeld.ID: store.StateScheduled, readSince.ID: store.StateInFlight,
		delayed: store.StateScheduled, inFlight.ID: store.StateInFlight}
	for id, state := range want {
		if live[id].State != state {
			t.Errorf("message %d after RunHeldNow of another breaker: %q, want %q", id, live[id].State, state)
		}
	}
	if live[otherHeld.ID].HeldBy != other {
		t.Errorf("message %d lost its breaker: %+v", otherHeld.ID, live[otherHeld.ID])
	}
	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n != 0 {
		t.Fatalf("RunHeldNow(%s) again = %d, %v; want none left", pay, n, err)
	}
	// A failure recorded for the attempt it is on makes the message
	// retrying again once no breaker holds it and it waits.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+h.q+`" SET vt = now() + interval '1 hour' WHERE msg_id = $1`, failed.ID); err != nil {
		t.Fatal(err)
	}
	if m := h.live()[failed.ID]; m.State != store.StateRetrying {
		t.Errorf("message %d, its failure recorded and no breaker holding it: %q, want retrying", failed.ID, m.State)
	}
}

// A read takes the mark off: the handler does not see it, and a snooze
// of another kind after it leaves the message held by no breaker.
// Headers that are not an object, another client's, are left as they
// are by the snooze and by the read.
func TestBreakerHoldEndsAtRead(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	pay := pgtest.Name("pay")
	m := h.readSent(store.NewMessage{Headers: json.RawMessage(`{"pgbus_kind":"charge"}`)})
	h.snooze(m, 0, pay)
	var raw string
	if err := s.Pool().QueryRow(ctx, `SELECT headers::text FROM pgmq."q_`+h.q+`" WHERE msg_id = $1`, m.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var marked map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &marked); err != nil || string(marked[store.HeaderBreakerHold]) != `{"breaker": "`+pay+`", "read_ct": 0}` || string(marked["pgbus_kind"]) != `"charge"` {
		t.Fatalf("headers after a breaker's snooze: %s (%v)", raw, err)
	}
	again := h.readID(m.ID)
	if string(again.Headers) != `{"pgbus_kind": "charge"}` {
		t.Fatalf("headers the read returned: %s; want the mark taken off", again.Headers)
	}
	h.snooze(again, time.Hour, "")
	if got := h.live()[m.ID]; got.State != store.StateScheduled || got.HeldBy != "" {
		t.Fatalf("after the handler's own snooze: %+v; want scheduled, held by none", got)
	}

	var foreign int64
	if err := s.Pool().QueryRow(ctx, `INSERT INTO pgmq."q_`+h.q+`" (message, headers, vt) VALUES ('{}', '["`+store.HeaderBreakerHold+`"]', now()) RETURNING msg_id`).Scan(&foreign); err != nil {
		t.Fatal(err)
	}
	h.snooze(h.readID(foreign), 0, pay)
	if got := h.readID(foreign); string(got.Headers) != `["`+store.HeaderBreakerHold+`"]` {
		t.Fatalf("headers that are not an object, after a snooze and a read: %s; want them as they were", got.Headers)
	}
}

// RunHeldNow and HeldByBreaker look in every level of a queue with
// priority levels its users name, once even when a user names the level
// too, and pass over a queue dropped since and a name no queue can have.
func TestRunHeldNowEveryLevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	pay := pgtest.Name("pay")
	levels := pgtest.Name("held")
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), levels) })
	h := holdTest{t: t, s: s, q: store.PriorityQueueName(levels, 1)}
	h.snooze(h.readSent(store.NewMessage{}), 5*time.Minute, pay)
	users := []store.BreakerUser{{Queue: pgtest.Name("dropped")}, {Queue: levels}, {Queue: h.q}, {Queue: "Not a queue; DROP TABLE x"}}
	if err := s.RecordBreakerUsers(ctx, pay, users); err != nil {
		t.Fatal(err)
	}
	if held, err := s.HeldByBreaker(ctx, pay); err != nil || len(held) != 1 || held[pay] != 1 {
		t.Fatalf("HeldByBreaker = %v, %v; want the message of level 1", held, err)
	}
	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n != 1 {
		t.Fatalf("RunHeldNow = %d, %v; want the message of level 1", n, err)
	}
	if m := h.live(); len(m) != 1 {
		t.Fatalf("level 1 after RunHeldNow: %+v", m)
	} else {
		for _, msg := range m {
			if msg.State != store.StateWaiting {
				t.Fatalf("level 1's message after RunHeldNow: %+v; want waiting", msg)
			}
		}
	}
}

// The jobs a breaker holds wait at most until its open period ends, so
// that they are counted among the messages visible by then, not among
// every delayed one: an opening by hand that cuts the period short
// brings the jobs held until its old end in with it, leaving other
// breakers' holds, delayed sends and a lengthened period's holds as they
// are.
func TestShortenedOpeningBringsHoldsIn(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	pay, other := pgtest.Name("pay"), pgtest.Name("other")
	for _, b := range []string{pay, other} {
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: b, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.OpenBreaker(ctx, b, store.BreakerOpening{For: 24 * time.Hour, By: "cli"}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordBreakerUsers(ctx, b, []store.BreakerUser{{Queue: h.q}}); err != nil {
			t.Fatal(err)
		}
	}
	held := h.readSent(store.NewMessage{})
	h.snooze(held, 24*time.Hour, pay) // until the day's opening ends
	otherHeld := h.readSent(store.NewMessage{})
	h.snooze(otherHeld, 24*time.Hour, other)
	delayed, err := s.Send(ctx, h.q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.HeldByBreaker(ctx, pay); err != nil || n[pay] != 1 {
		t.Fatalf("held by %s open for a day = %v, %v; want its job", pay, n, err)
	}

	_, until, err := s.OpenBreaker(ctx, pay, store.BreakerOpening{For: time.Hour, By: "cli", Reason: "shorter"})
	if err != nil {
		t.Fatal(err)
	}
	vt := func(id int64) time.Time {
		var at time.Time
		if err := s.Pool().QueryRow(ctx, `SELECT vt FROM pgmq."q_`+h.q+`" WHERE msg_id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	if got := vt(held.ID); got.After(until) || got.Before(until.Add(-time.Second)) {
		t.Errorf("the job held until the day's end waits until %v after the opening was cut to %v; want it brought in", got, until)
	}
	for _, id := range []int64{otherHeld.ID, delayed} {
		if got := vt(id); got.Before(time.Now().Add(23 * time.Hour)) {
			t.Errorf("message %d (another breaker's hold, or a delayed send) brought in to %v; want it left at a day", id, got)
		}
	}
	if n, err := s.HeldByBreaker(ctx, ""); err != nil || n[pay] != 1 || n[other] != 1 {
		t.Fatalf("held after the cut = %v, %v; want each breaker's job", n, err)
	}
	// Lengthened again, the holds keep their times: the next job that
	// meets the breaker waits until the new end.
	if _, _, err := s.OpenBreaker(ctx, pay, store.BreakerOpening{For: 2 * time.Hour, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	if got := vt(held.ID); got.After(until) {
		t.Errorf("the hold moved to %v when the opening was lengthened; want it at %v", got, until)
	}
}

// Forgetting the users of breakers a process's handlers no longer use
// removes only those of its queues and kinds under other breakers, and
// runs the jobs an old breaker held in a queue only when no user of it
// names that queue any more.
func TestForgetOtherBreakerUsers(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	a := holdTest{t: t, s: s, q: newQueue(t, s)}
	b := holdTest{t: t, s: s, q: newQueue(t, s)}
	old, kept := pgtest.Name("old"), pgtest.Name("kept")
	heldA := a.readSent(store.NewMessage{})
	a.snooze(heldA, time.Hour, old)
	heldB := b.readSent(store.NewMessage{})
	b.snooze(heldB, time.Hour, old)
	// Queue a's default handler and queue b's kind mail used the old
	// breaker; queue b's default handler still does (in another process).
	users := []store.BreakerUser{{Queue: a.q}, {Queue: b.q, Kind: "mail"}, {Queue: b.q}}
	if err := s.RecordBreakerUsers(ctx, old, users); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, kept, []store.BreakerUser{{Queue: a.q, Kind: "mail"}}); err != nil {
		t.Fatal(err)
	}
	ran, err := s.ForgetOtherBreakerUsers(ctx, []store.BreakerUse{
		{Queue: a.q}, // no breaker now
		{Queue: a.q, Kind: "mail", Breaker: kept}, // unchanged
		{Queue: b.q, Kind: "mail", Breaker: kept}, // another breaker now
	})
	if err != nil || len(ran) != 1 || ran[old] != 1 {
		t.Fatalf("ForgetOtherBreakerUsers = %v, %v; want the 1 job the old breaker held in %s run", ran, err, a.q)
	}
	var left []string
	if err := s.Pool().QueryRow(ctx, `SELECT array_agg(breaker || ' ' || queue_name || '/' || kind ORDER BY breaker, queue_name, kind)
		FROM pgbus.circuit_breaker_users WHERE breaker IN ($1, $2)`, old, kept).Scan(&left); err != nil {
		t.Fatal(err)
	}
	want := []string{kept + " " + a.q + "/mail", old + " " + b.q + "/"}
	if len(left) != 2 || left[0] != want[0] || left[1] != want[1] {
		t.Errorf("users left = %q; want %q", left, want)
	}
	if m := a.live()[heldA.ID]; m.State != store.StateWaiting || m.HeldBy != "" {
		t.Errorf("the job the old breaker held in %s: %q held by %q; want waiting, held by none", a.q, m.State, m.HeldBy)
	}
	if m := b.live()[heldB.ID]; m.HeldBy != old {
		t.Errorf("the job the old breaker held in %s, which a user of it still names: held by %q; want %q", b.q, m.HeldBy, old)
	}
	if ran, err := s.ForgetOtherBreakerUsers(ctx, nil); err != nil || len(ran) != 0 {
		t.Errorf("ForgetOtherBreakerUsers of no uses = %v, %v; want nothing", ran, err)
	}
}

// A job held by a breaker that no recorded user names in its queue (held
// again by a process on the old configuration after another's start
// forgot the use, which then restarted before its heartbeat recorded it
// again) runs at the next start of a process of that queue, which has no
// use of its own to forget: it waited out the breaker's open period. Holds
// of a breaker this process uses there, or another user names there, stay.
func TestForgetOtherBreakerUsersRunsOrphanHolds(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	c := holdTest{t: t, s: s, q: newQueue(t, s)}
	gone, mine, theirs := pgtest.Name("gone"), pgtest.Name("mine"), pgtest.Name("theirs")
	orphan := c.readSent(store.NewMessage{})
	c.snooze(orphan, time.Hour, gone)
	ownHold := c.readSent(store.NewMessage{})
	c.snooze(ownHold, time.Hour, mine)
	otherHold := c.readSent(store.NewMessage{})
	c.snooze(otherHold, time.Hour, theirs)
	for _, b := range []string{gone, mine, theirs} {
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: b, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.OpenBreaker(ctx, b, store.BreakerOpening{For: time.Hour, By: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordBreakerUsers(ctx, theirs, []store.BreakerUser{{Queue: c.q, Kind: "mail"}}); err != nil {
		t.Fatal(err)
	}
	ran, err := s.ForgetOtherBreakerUsers(ctx, []store.BreakerUse{{Queue: c.q}, {Queue: c.q, Kind: "sms", Breaker: mine}})
	if err != nil || len(ran) != 1 || ran[gone] != 1 {
		t.Fatalf("ForgetOtherBreakerUsers = %v, %v; want the 1 job %s held with no user left run", ran, err, gone)
	}
	live := c.live()
	if m := live[orphan.ID]; m.State != store.StateWaiting || m.HeldBy != "" {
		t.Errorf("the job held by %s, which no user names: %q held by %q; want waiting, held by none", gone, m.State, m.HeldBy)
	}
	if live[ownHold.ID].HeldBy != mine || live[otherHold.ID].HeldBy != theirs {
		t.Errorf("holds of a breaker this process uses (%q) and one another user names (%q); want both kept", live[ownHold.ID].HeldBy, live[otherHold.ID].HeldBy)
	}
}

// A reset runs the jobs its breaker holds in a queue no user of it names
// (a process that stopped for good during a rolling restart that turned
// the breaker off left them so), found by the open period it had, which
// bounds its holds: looked for in the users' queues only, they were not
// found, and waited out the period after the reset.
func TestRunHeldNowFindsHoldsOutsideItsUsersQueues(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	pay := pgtest.Name("pay")
	held := h.readSent(store.NewMessage{})
	h.snooze(held, 2*time.Hour, pay)
	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n != 0 {
		t.Fatalf("RunHeldNow without an open period = %d, %v; want none: the hold outlasts now and the slack", n, err)
	}
	until := time.Now().Add(2 * time.Hour)
	if n, err := s.RunHeldNow(ctx, pay, &until); err != nil || n != 1 {
		t.Fatalf("RunHeldNow = %d, %v; want the 1 job held within the period, in a queue no user names", n, err)
	}
	if m := h.live()[held.ID]; m.State != store.StateWaiting || m.HeldBy != "" {
		t.Errorf("the job held within the period: %q, held by %q; want waiting, held by none", m.State, m.HeldBy)
	}
}

// A reset by a role that may not read some other queue's table runs the
// holds in the queues it may read: the first table it could not read
// failed the whole search, and nothing was released.
func TestRunHeldNowPassesOverTablesItMayNotRead(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	h := holdTest{t: t, s: owner, q: newQueue(t, owner)}
	hidden := newQueue(t, owner)
	pay := pgtest.Name("pay")
	held := h.readSent(store.NewMessage{})
	h.snooze(held, time.Hour, pay)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+"; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role+
		"; REVOKE ALL ON pgmq.q_"+hidden+" FROM "+role)
	until := time.Now().Add(time.Hour)
	if n, err := openStore(t, roleURL).RunHeldNow(testContext(t), pay, &until); err != nil || n != 1 {
		t.Fatalf("RunHeldNow as a role that may not read %s = %d, %v; want the 1 job held in %s run", hidden, n, err, h.q)
	}
}

// A job that meets its breaker half-open is held until the probe is taken
// for lost, counted as held however long that is, and the end of the probe
// moves it: visible at once, its hold taken off, when the probe closed the
// breaker; to the end of the new open period when it failed. A hold
// written after the probe ended waits as the breaker then says.
func TestProbeEndWakesItsHolds(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	name := pgtest.Name("pay")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: h.q}}); err != nil {
		t.Fatal(err)
	}
	vt := func(id int64) time.Time {
		var at time.Time
		if err := s.Pool().QueryRow(ctx, `SELECT vt FROM pgmq."q_`+h.q+`" WHERE msg_id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	// probeNow opens the breaker, its cool-off over, and takes the
	// probe, taken for lost in two hours.
	probeNow := func() time.Time {
		t.Helper()
		if _, err := s.BreakerFailed(ctx, name, "503"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1`, name); err != nil {
			t.Fatal(err)
		}
		p, err := s.AcquireBreaker(ctx, name, 2*time.Hour)
		if err != nil || !p.Probe {
			t.Fatalf("verdict after the cool-off = %+v, %v; want the probe", p, err)
		}
		return p.ProbeUntil
	}
	// holdBeside reads a new message and snoozes it as a worker does that
	// the breaker told to wait for the probe.
	holdBeside := func() store.Message {
		t.Helper()
		m := h.readSent(store.NewMessage{})
		v, err := s.AcquireBreaker(ctx, name, 2*time.Hour)
		if err != nil || v.Allowed || v.ProbeUntil.IsZero() {
			t.Fatalf("verdict beside the probe = %+v, %v; want a wait for it", v, err)
		}
		item := store.SnoozeItem{MsgID: m.ID, Delay: v.RetryIn, Breaker: name, Probe: v.ProbeUntil, ReadCount: m.ReadCount, EnqueuedAt: m.EnqueuedAt}
		if got, err := s.SnoozeMany(ctx, h.q, []store.SnoozeItem{item}); err != nil || len(got) != 1 {
			t.Fatalf("snooze of message %d = %v, %v", m.ID, got, err)
		}
		return m
	}

	probe := probeNow()
	held := holdBeside()
	if got := vt(held.ID); !got.Equal(probe) {
		t.Fatalf("the job held beside the probe waits until %v; want the probe's end, %v", got, probe)
	}
	// Two hours is past the open period's end and the 15 minutes of
	// slack the count reads within.
	if n, err := s.HeldByBreaker(ctx, name); err != nil || n[name] != 1 {
		t.Fatalf("held beside the probe = %v, %v; want the job", n, err)
	}
	if _, err := s.BreakerSucceeded(ctx, name); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WakeProbeHolds(ctx, name, probe, time.Time{}); err != nil || n != 1 {
		t.Fatalf("wake after the probe closed the breaker = %d, %v; want the job", n, err)
	}
	if m := h.live()[held.ID]; m.HeldBy != "" || vt(held.ID).After(time.Now().Add(time.Minute)) {
		t.Fatalf("after the wake the job is %+v, visible at %v; want it visible now, no longer held", m, vt(held.ID))
	}
	h.readID(held.ID)

	// A hold written after its probe closed the breaker, which the wake
	// could not find, runs at once.
	probe = probeNow()
	late := h.readSent(store.NewMessage{})
	if _, err := s.BreakerSucceeded(ctx, name); err != nil {
		t.Fatal(err)
	}
	item := store.SnoozeItem{MsgID: late.ID, Delay: time.Hour, Breaker: name, Probe: probe, ReadCount: late.ReadCount, EnqueuedAt: late.EnqueuedAt}
	if got, err := s.SnoozeMany(ctx, h.q, []store.SnoozeItem{item}); err != nil || len(got) != 1 {
		t.Fatalf("snooze of message %d = %v, %v", late.ID, got, err)
	}
	if got := vt(late.ID); got.After(time.Now().Add(time.Minute)) {
		t.Fatalf("a hold written after its probe closed the breaker waits until %v; want it visible now", got)
	}
	h.readID(late.ID)

	// A failed probe: the hold waits for the new open period's end.
	probe = probeNow()
	held = holdBeside()
	c, err := s.BreakerFailed(ctx, name, "503")
	if err != nil || c.To != store.BreakerOpen {
		t.Fatalf("failure of the probe = %+v, %v; want the breaker open", c, err)
	}
	if n, err := s.WakeProbeHolds(ctx, name, probe, time.Time{}); err != nil || n != 1 {
		t.Fatalf("wake after the probe failed = %d, %v; want the job", n, err)
	}
	if got := vt(held.ID); !got.Equal(c.OpenUntil) {
		t.Fatalf("after the failed probe the job waits until %v; want the new open period's end, %v", got, c.OpenUntil)
	}
	if m := h.live()[held.ID]; m.HeldBy != name {
		t.Fatalf("after the failed probe the job is %+v; want it held by %s", m, name)
	}
}

// Headers that are no JSON object hold as any: JSON null, what a
// producer's nil map marshals to, as no headers at all; an array, a string
// or a number kept whole under pgbus_original_headers beside the mark,
// and given back as they were by the read that takes the mark off, or by
// the reset of the breaker. Each such job an open breaker snoozed is
// shown held by it, counted, and run by RunHeldNow.
func TestBreakerHoldsJobsOfAnyHeaders(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	h := holdTest{t: t, s: s, q: newQueue(t, s)}
	pay := pgtest.Name("pay")
	if err := s.RecordBreakerUsers(ctx, pay, []store.BreakerUser{{Queue: h.q}}); err != nil {
		t.Fatal(err)
	}
	// The headers each message is sent with, and those it has once the
	// mark is off.
	cases := []struct{ sent, after string }{
		{"NULL", "{}"},
		{"'null'", "{}"},
		{"'[1]'", "[1]"},
		{`'"s"'`, `"s"`},
		{"'7'", "7"},
		{`'{"pgbus_original_headers": "from-producer"}'`, `{"pgbus_original_headers": "from-producer"}`},
	}
	insert := func(headers string) int64 {
		var id int64
		if err := s.Pool().QueryRow(ctx, `INSERT INTO pgmq."q_`+h.q+`" (message, headers, vt) VALUES ('{}', `+headers+`, now()) RETURNING msg_id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	after := map[int64]string{}
	var ids []int64
	for _, c := range cases {
		id := insert(c.sent)
		h.snooze(h.readID(id), 5*time.Minute, pay)
		after[id], ids = c.after, append(ids, id)
	}
	live := h.live()
	for _, id := range ids {
		if m := live[id]; m.State != store.StateScheduled || m.HeldBy != pay {
			t.Errorf("message %d, headers %s: state %q, held by %q; want scheduled, held by %s", id, m.Headers, m.State, m.HeldBy, pay)
		}
	}
	if held, err := s.HeldByBreaker(ctx, pay); err != nil || held[pay] != int64(len(ids)) {
		t.Fatalf("HeldByBreaker = %v, %v; want the %d jobs", held, err, len(ids))
	}
	if n, err := s.RunHeldNow(ctx, pay, nil); err != nil || n != int64(len(ids)) {
		t.Fatalf("RunHeldNow = %d, %v; want the %d jobs", n, err, len(ids))
	}
	for _, id := range ids {
		var headers string
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(headers::text, 'NULL') FROM pgmq."q_`+h.q+`" WHERE msg_id = $1`, id).Scan(&headers); err != nil {
			t.Fatal(err)
		}
		if headers != after[id] {
			t.Errorf("message %d after RunHeldNow: headers %s, want %s", id, headers, after[id])
		}
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgmq."q_`+h.q+`"`); err != nil {
		t.Fatal(err)
	}

	// The mark taken off by the read that runs the job.
	id := insert("'[1]'")
	h.snooze(h.readID(id), 0, pay)
	if got := h.readID(id); string(got.Headers) != "[1]" {
		t.Errorf("headers [1] read after a breaker's snooze: %s", got.Headers)
	}
	// A handler's own snooze counts on JSON null headers as on none.
	id = insert("'null'")
	h.snooze(h.readID(id), 0, "")
	if got := h.readID(id); string(got.Headers) != `{"`+store.HeaderSnoozes+`": 1}` {
		t.Errorf("headers null read after a handler's snooze: %s, want the snooze counted", got.Headers)
	}
}
