package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestBreakerLifecycle(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("breaker")
	// A cool-off long enough that the acquire just after the breaker
	// opens comes before its end on a loaded machine too: at 100ms it
	// came after, once, and got the probe.
	cfg := store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Second, MaxCoolOff: 3 * time.Second}
	if err := s.EnsureBreaker(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	state := func() store.BreakerState { return breakerNamed(t, ctx, s, name) }
	acquire := func() store.BreakerVerdict {
		v, err := s.AcquireBreaker(ctx, name, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	fail := func() string {
		st, err := s.BreakerFailure(ctx, name, "503")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if v := acquire(); !v.Allowed || v.Probe {
		t.Fatalf("closed breaker verdict = %+v", v)
	}
	if fail() != store.BreakerClosed || fail() != store.BreakerOpen {
		t.Fatal("two consecutive failures should open a threshold-2 breaker")
	}
	v := acquire()
	if v.Allowed || v.RetryIn <= 0 || v.RetryIn > time.Minute {
		t.Fatalf("open breaker verdict = %+v; want a wait until the cool-off ends", v)
	}
	for i, wantCoolOff := range []float64{2, 3, 3} { // doubling, capped
		waitCoolOff(t, s, name)
		probe := acquire()
		if !probe.Allowed || !probe.Probe {
			t.Fatalf("round %d: after the cool-off verdict = %+v; want the probe", i, probe)
		}
		// A caller beside the probe waits until the probe is taken for
		// lost (a minute): its end wakes the jobs held meanwhile.
		if v := acquire(); v.Allowed {
			t.Fatalf("round %d: a second caller got through while the probe runs", i)
		} else if v.RetryIn < 30*time.Second || !v.ProbeUntil.Equal(probe.ProbeUntil) {
			t.Fatalf("round %d: verdict beside the probe = %+v; want a wait until the probe's end, %v", i, v, probe.ProbeUntil)
		}
		if fail() != store.BreakerOpen {
			t.Fatalf("round %d: a failed probe must reopen the breaker", i)
		}
		if got := state().CurrentCoolOffSeconds; got != wantCoolOff {
			t.Fatalf("round %d: cool-off %vs, want %vs", i, got, wantCoolOff)
		}
	}
	waitCoolOff(t, s, name)
	if v := acquire(); !v.Probe {
		t.Fatalf("verdict = %+v, want the probe", v)
	}
	if err := s.BreakerSuccess(ctx, name); err != nil {
		t.Fatal(err)
	}
	if st := state(); st.State != store.BreakerClosed || st.ConsecutiveFailures != 0 || st.CurrentCoolOffSeconds != 1 || st.OpenUntil != nil {
		t.Fatalf("after a successful probe: %+v", st)
	}
	fail()
	fail()
	before := state()
	was, err := s.ResetBreaker(ctx, name, false)
	if err != nil || state().State != store.BreakerClosed || state().ConsecutiveFailures != 0 {
		t.Fatalf("reset: %v, state %+v", err, state())
	}
	if was.State != before.State || was.ConsecutiveFailures != before.ConsecutiveFailures || was.ConsecutiveFailures == 0 {
		t.Fatalf("reset says the breaker was %+v; it was %+v", was, before)
	}
	if was, err = s.ResetBreaker(ctx, name, false); err != nil || was.State != store.BreakerClosed || was.ConsecutiveFailures != 0 {
		t.Fatalf("a second reset says the breaker was %+v (%v); want closed with no failure", was, err)
	}
}

// Many callers racing for a half-open breaker: exactly one gets the probe.
func TestBreakerOneProbeUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := cooledBreaker(t, s)
	var wg sync.WaitGroup
	var mu sync.Mutex
	probes, allowed := 0, 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := s.AcquireBreaker(ctx, name, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if v.Probe {
				probes++
			}
			if v.Allowed {
				allowed++
			}
		}()
	}
	wg.Wait()
	if probes != 1 || allowed != 1 {
		t.Fatalf("%d probes and %d allowed among 16 racing callers, want exactly 1", probes, allowed)
	}
}

// A probe released (its call said nothing of the downstream) lets the next
// caller probe at once, the cool-off and failures as they were; a release
// naming a probe no longer running changes nothing.
func TestBreakerProbeReleased(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := cooledBreaker(t, s)
	first, err := s.AcquireBreaker(ctx, name, time.Hour)
	if err != nil || !first.Probe || first.ProbeUntil.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("verdict = %+v, %v; want the probe, for an hour", first, err)
	}
	change, err := s.ReleaseBreakerProbe(ctx, name, first.ProbeUntil)
	if err != nil || change.From != store.BreakerHalfOpen || change.To != store.BreakerOpen {
		t.Fatalf("release = %+v, %v; want half_open to open", change, err)
	}
	if st := breakerNamed(t, ctx, s, name); st.ConsecutiveFailures != 1 || st.CurrentCoolOffSeconds != 0.05 {
		t.Fatalf("after the release: %+v; want its failure and cool-off kept", st)
	}
	second, err := s.AcquireBreaker(ctx, name, time.Hour)
	if err != nil || !second.Probe {
		t.Fatalf("verdict after the release = %+v, %v; want the next probe at once", second, err)
	}
	if change, err := s.ReleaseBreakerProbe(ctx, name, first.ProbeUntil); err != nil || change.Changed() {
		t.Fatalf("a release of the first probe = %+v, %v; want no change while the second runs", change, err)
	}
	if v, err := s.AcquireBreaker(ctx, name, time.Hour); err != nil || v.Allowed {
		t.Fatalf("verdict beside the second probe = %+v, %v; want a wait", v, err)
	}
}

func TestBreakerBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	bad := []store.BreakerConfig{
		{Name: "", FailureThreshold: 1, CoolOff: time.Second, MaxCoolOff: time.Second},
		{Name: "x", FailureThreshold: 0, CoolOff: time.Second, MaxCoolOff: time.Second},
		{Name: "x", FailureThreshold: -3, CoolOff: time.Second, MaxCoolOff: time.Second},
		{Name: "x", FailureThreshold: 1, CoolOff: -time.Second, MaxCoolOff: time.Second},
		{Name: "x", FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Second},
	}
	for _, c := range bad {
		if err := s.EnsureBreaker(ctx, c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("EnsureBreaker(%+v) = %v, want ErrInvalid", c, err)
		}
	}
	missing := uniqueName("nope")
	if _, err := s.AcquireBreaker(ctx, missing, time.Second); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("acquire missing = %v", err)
	}
	if _, err := s.ResetBreaker(ctx, `'; DROP TABLE pgbus.circuit_breakers; --`, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reset odd name = %v, want ErrNotFound", err)
	}
}

// A success reported while the breaker is open (a call let through before
// it opened) does not close it; only the probe's success does.
func TestBreakerOpenIgnoresLateSuccess(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("breaker")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if st, err := s.BreakerFailure(ctx, name, "down"); err != nil || st != store.BreakerOpen {
		t.Fatalf("failure: %s %v", st, err)
	}
	if err := s.BreakerSuccess(ctx, name); err != nil {
		t.Fatal(err)
	}
	if v, err := s.AcquireBreaker(ctx, name, time.Second); err != nil || v.Allowed {
		t.Fatalf("after a late success the breaker let a call through: %+v %v", v, err)
	}
}

// waitCoolOff waits until the cool-off of open breaker name has ended by
// the database's clock, which the breaker statements read.
// cooledBreaker makes a breaker opened by one failure whose cool-off has
// ended: the next caller gets the probe.
func cooledBreaker(t *testing.T, s *store.Store) string {
	t.Helper()
	ctx := testContext(t)
	name := uniqueName("breaker")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: 50 * time.Millisecond, MaxCoolOff: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BreakerFailure(ctx, name, "down"); err != nil {
		t.Fatal(err)
	}
	waitCoolOff(t, s, name)
	return name
}

func waitCoolOff(t *testing.T, s *store.Store, name string) {
	t.Helper()
	pgtest.Eventually(t, time.Minute, "the cool-off of breaker "+name+" to end", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1 AND open_until <= clock_timestamp()`, name) == 1
	})
}

// A breaker keeps when a call through it last failed and last succeeded,
// a success leaving an open breaker open, and the queues and kinds that
// use it, each once however often it is recorded.
func TestBreakerActivityAndUsers(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("breaker")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	find := func() store.BreakerState { return breakerNamed(t, ctx, s, name) }
	if b := find(); b.LastFailureAt != nil || b.LastSuccessAt != nil || b.Users == nil || len(b.Users) != 0 {
		t.Fatalf("new breaker = %+v; want no activity and an empty list of users", b)
	}
	if st, err := s.BreakerFailure(ctx, name, "503"); err != nil || st != store.BreakerOpen {
		t.Fatalf("failure = %s, %v", st, err)
	}
	if err := s.BreakerSuccess(ctx, name); err != nil {
		t.Fatal(err)
	}
	b := find()
	if b.State != store.BreakerOpen || b.ConsecutiveFailures != 1 || b.LastFailureAt == nil || b.LastSuccessAt == nil || b.LastSuccessAt.Before(*b.LastFailureAt) {
		t.Fatalf("after a failure then a late success = %+v; want still open, both times recorded", b)
	}
	users := []store.BreakerUser{{Queue: "orders", Kind: "charge"}, {Queue: "emails"}}
	for range 2 {
		if err := s.RecordBreakerUsers(ctx, name, users); err != nil {
			t.Fatal(err)
		}
	}
	if b := find(); len(b.Users) != 2 || b.Users[0].Queue != "emails" || b.Users[0].Kind != "" || b.Users[1].Kind != "charge" || b.Users[1].SeenAt.IsZero() {
		t.Fatalf("users = %+v; want emails (default handler) and orders/charge, once each", b.Users)
	}
}

// breakerNamed returns the listed state of breaker name.
func breakerNamed(t *testing.T, ctx context.Context, s *store.Store, name string) store.BreakerState {
	t.Helper()
	all, err := s.ListBreakers(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range all {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("breaker %s not listed", name)
	return store.BreakerState{}
}

// BreakerFailed says which failure opened the breaker: the one that
// reached the threshold and a failed probe, not a failure counted while it
// is already open nor one below the threshold.
func TestBreakerFailureSaysWhenItOpened(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("opened")
	cfg := store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 50 * time.Millisecond, MaxCoolOff: time.Second}
	if err := s.EnsureBreaker(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	fail := func() store.BreakerChange {
		t.Helper()
		r, err := s.BreakerFailed(ctx, name, "503")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := fail(); r.Opened() || r.To != store.BreakerClosed || r.Failures != 1 {
		t.Fatalf("first failure of two: %+v", r)
	}
	r := fail()
	if !r.Opened() || r.To != store.BreakerOpen || r.Failures != 2 || !r.OpenUntil.After(time.Now().Add(-time.Second)) {
		t.Fatalf("the failure at the threshold: %+v; want it to open the breaker", r)
	}
	if r := fail(); r.Opened() || r.To != store.BreakerOpen {
		t.Fatalf("a failure while open: %+v; want no second opening", r)
	}
	waitCoolOff(t, s, name)
	if v, err := s.AcquireBreaker(ctx, name, time.Minute); err != nil || !v.Probe {
		t.Fatalf("after the cool-off: %+v, %v; want the probe", v, err)
	}
	if r := fail(); !r.Opened() || r.To != store.BreakerOpen {
		t.Fatalf("a failed probe: %+v; want it to reopen the breaker", r)
	}
}

// A breaker lists the users seen within BreakerUsersWindow: a running
// process's touch brings an old one back without rewriting fresh ones,
// and retention deletes those no process has had for StatsRetention.
func TestBreakerUsersAgeOut(t *testing.T) {
	t.Parallel()
	// A database of its own: the retention pass of another package's test
	// would delete the old user first, or hold the election meanwhile.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	name := uniqueName("aging")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	fresh, gone, old := store.BreakerUser{Queue: "fresh"}, store.BreakerUser{Queue: "gone"}, store.BreakerUser{Queue: "old"}
	if err := s.RecordBreakerUsers(ctx, name, []store.BreakerUser{fresh, gone, old}); err != nil {
		t.Fatal(err)
	}
	age := func(queue, by string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breaker_users SET seen_at = now() - $3::interval WHERE breaker = $1 AND queue_name = $2`, name, queue, by); err != nil {
			t.Fatal(err)
		}
	}
	age("fresh", "30 minutes")
	age("gone", "2 days")
	age("old", "8 days")
	listed := func() []string {
		var out []string
		for _, u := range breakerNamed(t, ctx, s, name).Users {
			out = append(out, u.Queue)
		}
		return out
	}
	if got := listed(); len(got) != 1 || got[0] != "fresh" {
		t.Fatalf("users listed = %v; want only fresh, seen within %s", got, store.BreakerUsersWindow)
	}
	before := breakerNamed(t, ctx, s, name).Users[0].SeenAt
	if err := s.TouchBreakerUsers(ctx, map[string][]store.BreakerUser{name: {fresh, gone}}); err != nil {
		t.Fatal(err)
	}
	b := breakerNamed(t, ctx, s, name)
	if len(b.Users) != 2 || b.Users[0].Queue != "fresh" || b.Users[1].Queue != "gone" || !b.Users[0].SeenAt.Equal(before) || time.Since(b.Users[1].SeenAt) > time.Minute {
		t.Fatalf("after a touch: %+v; want gone back and seen now, fresh not rewritten (seen %v)", b.Users, before)
	}
	rep, err := s.RunRetention(ctx, 1000, 0)
	if err != nil || !rep.Ran || rep.BreakerUsersDeleted < 1 {
		t.Fatalf("retention = %+v, %v; want the user not seen for 8 days deleted", rep, err)
	}
	var left []string
	if err := s.Pool().QueryRow(ctx, `SELECT array_agg(queue_name ORDER BY queue_name) FROM pgbus.circuit_breaker_users WHERE breaker = $1`, name).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0] != "fresh" || left[1] != "gone" {
		t.Fatalf("rows left after retention: %v; want fresh and gone", left)
	}
}

// Retention deletes a breaker that has had no users for StatsRetention and
// has not changed for as long, and keeps one with a user, one that changed
// lately and one that let a call through lately.
func TestRetentionDeletesBreakersNoneUses(t *testing.T) {
	t.Parallel()
	// A database of its own: breakers are left open, which the health of
	// a shared one would report.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	names := map[string]string{}
	for _, which := range []string{"unused", "used", "changed", "succeeded"} {
		names[which] = uniqueName(which)
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: names[which], FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.BreakerFailed(ctx, names[which], "boom"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordBreakerUsers(ctx, names["used"], []store.BreakerUser{{Queue: "q"}}); err != nil {
		t.Fatal(err)
	}
	age := func(which, set string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET `+set+` WHERE name = $1`, names[which]); err != nil {
			t.Fatal(err)
		}
	}
	for which := range names {
		age(which, `updated_at = now() - interval '8 days', last_success_at = NULL`)
	}
	age("changed", `updated_at = now() - interval '6 days'`)
	age("succeeded", `last_success_at = now() - interval '1 hour'`)
	rep, err := s.RunRetention(ctx, 1000, 0)
	if err != nil || !rep.Ran || rep.BreakersDeleted < 1 {
		t.Fatalf("retention = %+v, %v; want the unused breaker deleted", rep, err)
	}
	for which, name := range names {
		want := 1
		if which == "unused" {
			want = 0
		}
		if left := dlCount(t, s, `SELECT count(*) FROM pgbus.circuit_breakers WHERE name = $1`, name); left != want {
			t.Errorf("breaker %s: %d rows left, want %d", which, left, want)
		}
	}
}

// A breaker opened by hand holds its jobs until the time given: a closed
// one refuses calls until then, with that time to come back at; a probe
// under way when it was opened leaves it open whatever its outcome; and
// once the time is up the next call probes it. A missing breaker and a
// time out of range are refused.
func TestOpenBreakerByHand(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("maint")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 5, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}
	was, until, err := s.OpenBreaker(ctx, name, store.BreakerOpening{For: time.Hour, By: "cli", Reason: "bank maintenance, OPS-7"})
	if err != nil || was.State != store.BreakerClosed || was.OpenedBy != "" || until.Before(time.Now().Add(59*time.Minute)) || until.After(time.Now().Add(61*time.Minute)) {
		t.Fatalf("open = %+v, %v, %v; want it was closed and open for an hour", was, until, err)
	}
	v, err := s.AcquireBreaker(ctx, name, time.Minute)
	if err != nil || v.Allowed || v.RetryIn < 59*time.Minute || v.RetryIn > time.Hour {
		t.Fatalf("verdict of the breaker opened by hand = %+v, %v; want a wait of the hour it is open for", v, err)
	}
	if st := breakerNamed(t, ctx, s, name); st.State != store.BreakerOpen || st.OpenedAt == nil || st.OpenedBy != "cli" || st.OpenReason != "bank maintenance, OPS-7" {
		t.Fatalf("breaker opened by hand: %+v; want it open, by cli, with its reason", st)
	}

	// A probe under way when it is opened by hand changes nothing.
	probing := cooledBreaker(t, s)
	probe, err := s.AcquireBreaker(ctx, probing, time.Hour)
	if err != nil || !probe.Probe {
		t.Fatalf("verdict = %+v, %v; want the probe", probe, err)
	}
	if was, _, err := s.OpenBreaker(ctx, probing, store.BreakerOpening{For: time.Hour, By: "mcp:agent/1"}); err != nil || was.State != store.BreakerHalfOpen {
		t.Fatalf("open during a probe = %+v, %v; want it was half_open", was, err)
	}
	if change, err := s.BreakerSucceeded(ctx, probing); err != nil || change.Changed() {
		t.Fatalf("the probe's success after the breaker was opened by hand = %+v, %v; want no change", change, err)
	}
	if change, err := s.ReleaseBreakerProbe(ctx, probing, probe.ProbeUntil); err != nil || change.Changed() {
		t.Fatalf("the probe given back after the breaker was opened by hand = %+v, %v; want no change", change, err)
	}
	if st := breakerNamed(t, ctx, s, probing); st.State != store.BreakerOpen || st.OpenedBy != "mcp:agent/1" || st.OpenReason != "" {
		t.Fatalf("breaker after its probe ended: %+v; want it open still, by hand, without a reason", st)
	}
	// A reset keeps an opening by hand whose window is not over, unless
	// asked to end it; then it says whose it was.
	if was, err := s.ResetBreaker(ctx, probing, false); err != nil || !was.Kept || was.OpenedBy != "mcp:agent/1" || was.OpenUntil == nil || !was.OpenUntil.After(time.Now()) {
		t.Fatalf("reset of the breaker opened by hand, not asked to end it = %+v, %v; want it kept, who opened it and until when said", was, err)
	}
	if st := breakerNamed(t, ctx, s, probing); st.State != store.BreakerOpen || st.OpenedBy != "mcp:agent/1" {
		t.Fatalf("breaker after a reset that kept it: %+v; want it open by hand still", st)
	}
	if was, err := s.ResetBreaker(ctx, probing, true); err != nil || was.Kept || was.OpenedBy != "mcp:agent/1" || was.State != store.BreakerOpen {
		t.Fatalf("reset of the breaker opened by hand = %+v, %v; want who opened it", was, err)
	}
	if st := breakerNamed(t, ctx, s, probing); st.State != store.BreakerClosed || st.OpenedBy != "" {
		t.Fatalf("breaker after its reset: %+v; want it closed, no longer opened by hand", st)
	}

	// Opened again, the latest opening is the one shown; its time up,
	// the next call is the probe, which ends the opening by hand.
	if was, _, err := s.OpenBreaker(ctx, name, store.BreakerOpening{For: time.Second, By: "dashboard", Reason: "longer"}); err != nil ||
		was.OpenedBy != "cli" || was.OpenReason != "bank maintenance, OPS-7" {
		t.Fatalf("opened again = %+v, %v; want the earlier opening as what it was", was, err)
	}
	if st := breakerNamed(t, ctx, s, name); st.OpenedBy != "dashboard" || st.OpenReason != "longer" {
		t.Fatalf("breaker opened again: %+v; want the latest opening", st)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	if v, err := s.AcquireBreaker(ctx, name, time.Minute); err != nil || !v.Probe {
		t.Fatalf("verdict once the time is up = %+v, %v; want the probe", v, err)
	}
	if change, err := s.BreakerFailed(ctx, name, "still down"); err != nil || !change.Opened() {
		t.Fatalf("the probe failed: %+v, %v; want the breaker open again", change, err)
	}
	if st := breakerNamed(t, ctx, s, name); st.State != store.BreakerOpen || st.OpenedBy != "" || st.OpenReason != "" {
		t.Fatalf("breaker its failed probe opened: %+v; want it open, not by hand", st)
	}

	if _, _, err := s.OpenBreaker(ctx, uniqueName("nope"), store.BreakerOpening{For: time.Hour, By: "cli"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("open of a missing breaker: %v; want not found", err)
	}
	for _, o := range []store.BreakerOpening{{For: 0, By: "cli"}, {For: -time.Hour, By: "cli"}, {For: 999 * time.Millisecond, By: "cli"},
		{For: store.MaxOpenByHand + time.Second, By: "cli"}, {For: time.Hour}, {For: time.Hour, By: strings.Repeat("b", store.MaxAuditName+1)},
		{For: time.Hour, By: "cli", Reason: strings.Repeat("r", store.MaxOpenReason+1)}} {
		if _, _, err := s.OpenBreaker(ctx, name, o); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("open %+.60v: %v; want it refused", o, err)
		}
	}
	// A reason is kept as given, SQL in it too.
	bobby := `'); DROP TABLE pgbus.circuit_breakers; --`
	if _, _, err := s.OpenBreaker(ctx, name, store.BreakerOpening{For: time.Hour, By: "cli", Reason: bobby}); err != nil {
		t.Fatal(err)
	}
	if st := breakerNamed(t, ctx, s, name); st.OpenReason != bobby {
		t.Errorf("reason kept: %q, want %q", st.OpenReason, bobby)
	}
	// Its time up (no job has probed yet), the window is over: a reset
	// closes it without being told to end it.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET open_until = now() - interval '1 second' WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	if was, err := s.ResetBreaker(ctx, name, false); err != nil || was.Kept {
		t.Fatalf("reset once the opening's time is up = %+v, %v; want it closed", was, err)
	}
	if st := breakerNamed(t, ctx, s, name); st.State != store.BreakerClosed || st.OpenedBy != "" {
		t.Fatalf("breaker after the reset: %+v; want it closed", st)
	}
}

// A pgbus of an older schema that closes or reopens a breaker opened by
// hand leaves who opened it behind: the breaker is not shown opened by
// hand once its open period is another one, and a reset of it is not
// refused as the person's window.
func TestOpeningByHandEndsWithItsPeriod(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("olderclose")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 5, CoolOff: time.Second, MaxCoolOff: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OpenBreaker(ctx, name, store.BreakerOpening{For: time.Hour, By: "cli", Reason: "maint"}); err != nil {
		t.Fatal(err)
	}
	// An older pgbus's reset, then failures that open it again, writing
	// only the columns it knows.
	older := func(set string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breakers SET `+set+` WHERE name = $1`, name); err != nil {
			t.Fatal(err)
		}
	}
	older(`state = 'closed', open_until = NULL, opened_at = NULL`)
	if st := breakerNamed(t, ctx, s, name); st.State != store.BreakerClosed || st.OpenedBy != "" || st.OpenReason != "" {
		t.Fatalf("breaker an older pgbus closed: %+v; want it closed, by no hand", st)
	}
	older(`state = 'open', opened_at = now(), open_until = now() + interval '1 hour', consecutive_failures = 5`)
	if st := breakerNamed(t, ctx, s, name); st.State != store.BreakerOpen || st.OpenedBy != "" {
		t.Fatalf("breaker failures opened again: %+v; want it open, by no hand", st)
	}
	if was, err := s.ResetBreaker(ctx, name, false); err != nil || was.Kept || was.OpenedBy != "" {
		t.Fatalf("reset of the breaker failures opened = %+v, %v; want it reset, opened by no hand", was, err)
	}
	// Opened by hand again, it is the person's window until its end.
	if _, _, err := s.OpenBreaker(ctx, name, store.BreakerOpening{For: time.Hour, By: "cli", Reason: "again"}); err != nil {
		t.Fatal(err)
	}
	if was, err := s.ResetBreaker(ctx, name, false); err != nil || !was.Kept || was.OpenedBy != "cli" || was.OpenReason != "again" {
		t.Fatalf("reset of the breaker opened by hand again = %+v, %v; want it kept, by cli", was, err)
	}
}

// A breaker's changed cool-off applies at once to a closed breaker, whose
// next opening lasts the new cool-off, and to an open one from its next
// opening on: the opening in progress keeps its end, and the next one is
// the new cool-off doubled as often as the old one was. Processes that
// ensure the same configuration at once agree on it.
func TestBreakerReconfiguredCoolOff(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	ensureAll := func(c store.BreakerConfig) {
		t.Helper()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.EnsureBreaker(ctx, c); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	period := func(st store.BreakerState) time.Duration {
		t.Helper()
		if st.State != store.BreakerOpen || st.OpenedAt == nil || st.OpenUntil == nil {
			t.Fatalf("breaker = %+v; want it open", st)
		}
		return st.OpenUntil.Sub(*st.OpenedAt)
	}

	// Closed: the lowered cool-off is the next opening's.
	closed := uniqueName("cooltest")
	ensureAll(store.BreakerConfig{Name: closed, FailureThreshold: 2, CoolOff: 30 * time.Second, MaxCoolOff: 5 * time.Minute})
	ensureAll(store.BreakerConfig{Name: closed, FailureThreshold: 2, CoolOff: 2 * time.Second, MaxCoolOff: 5 * time.Minute})
	if st := breakerNamed(t, ctx, s, closed); st.CoolOffSeconds != 2 || st.CurrentCoolOffSeconds != 2 {
		t.Fatalf("closed breaker after its cool-off went from 30s to 2s = %+v; want both cool-offs 2s", st)
	}
	for range 2 {
		if _, err := s.BreakerFailure(ctx, closed, "503"); err != nil {
			t.Fatal(err)
		}
	}
	if got := period(breakerNamed(t, ctx, s, closed)); got != 2*time.Second {
		t.Fatalf("first opening after the cool-off went from 30s to 2s lasts %v, want 2s", got)
	}

	// Open, after one failed probe: its opening keeps its end, the next
	// one is the new cool-off doubled twice.
	open := uniqueName("cooltest")
	ensureAll(store.BreakerConfig{Name: open, FailureThreshold: 1, CoolOff: time.Second, MaxCoolOff: time.Hour})
	if _, err := s.BreakerFailure(ctx, open, "503"); err != nil {
		t.Fatal(err)
	}
	waitCoolOff(t, s, open)
	if v, err := s.AcquireBreaker(ctx, open, time.Minute); err != nil || !v.Probe {
		t.Fatalf("verdict = %+v, %v; want the probe", v, err)
	}
	if _, err := s.BreakerFailure(ctx, open, "503"); err != nil {
		t.Fatal(err)
	}
	before := breakerNamed(t, ctx, s, open)
	if got := period(before); got != 2*time.Second {
		t.Fatalf("opening after a failed probe lasts %v, want 2s", got)
	}
	ensureAll(store.BreakerConfig{Name: open, FailureThreshold: 1, CoolOff: 100 * time.Millisecond, MaxCoolOff: time.Hour})
	after := breakerNamed(t, ctx, s, open)
	if !after.OpenUntil.Equal(*before.OpenUntil) || after.CurrentCoolOffSeconds != 0.2 {
		t.Fatalf("open breaker after its cool-off went from 1s to 100ms = %+v; want its end kept, %v, and the current cool-off 0.2s", after, before.OpenUntil)
	}
	waitCoolOff(t, s, open)
	if v, err := s.AcquireBreaker(ctx, open, time.Minute); err != nil || !v.Probe {
		t.Fatalf("verdict = %+v, %v; want the probe", v, err)
	}
	if _, err := s.BreakerFailure(ctx, open, "503"); err != nil {
		t.Fatal(err)
	}
	if got := period(breakerNamed(t, ctx, s, open)); got != 400*time.Millisecond {
		t.Fatalf("next opening after the cool-off went from 1s to 100ms lasts %v, want 400ms", got)
	}
	// A max cool-off lowered below the current one caps it.
	ensureAll(store.BreakerConfig{Name: open, FailureThreshold: 1, CoolOff: 100 * time.Millisecond, MaxCoolOff: 300 * time.Millisecond})
	if st := breakerNamed(t, ctx, s, open); st.CurrentCoolOffSeconds != 0.3 {
		t.Fatalf("current cool-off after the max went down to 300ms = %vs, want 0.3s", st.CurrentCoolOffSeconds)
	}
}
