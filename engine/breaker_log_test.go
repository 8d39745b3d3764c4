package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A person watching the workers sees the breaker open once when its
// downstream fails, reopen when its probe fails, and close once the
// downstream is back; a pipeline that keeps only warnings sees the
// downstream cut off: the opening and each reopening are warnings, the
// closing is at info.
func TestBreakerTransitionsLogged(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 20 * time.Millisecond })
	name := uniqueName("logged")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 100 * time.Millisecond, MaxCoolOff: 200 * time.Millisecond}
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var healthy atomic.Bool
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = log })
	c.Handle("call", func(context.Context, *engine.Job) error {
		if healthy.Load() {
			return nil
		}
		return errors.New("503 from the bank")
	}, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, c)
	for i := range 4 {
		pgtest.Send(t, c, q, i, engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, 30*time.Second, "the reopening logged", func() bool {
		return strings.Contains(logs.String(), "circuit breaker reopened: its probe failed")
	})
	healthy.Store(true)
	pgtest.Eventually(t, 30*time.Second, "every message archived", func() bool { return pgtest.Archived(t, s, q) == 4 })
	out := logs.String()
	lines := map[string][]string{}
	for l := range strings.Lines(out) {
		for _, what := range []string{"circuit breaker opened", "circuit breaker reopened", "circuit breaker closed"} {
			if strings.Contains(l, what) {
				lines[what] = append(lines[what], l)
			}
		}
	}
	if n := len(lines["circuit breaker opened"]); n != 1 {
		t.Errorf("the opening logged %d times, want once:\n%s", n, out)
	}
	if n := len(lines["circuit breaker closed"]); n != 1 {
		t.Errorf("the closing logged %d times, want once:\n%s", n, out)
	}
	for what, level := range map[string]string{"circuit breaker opened": "WARN", "circuit breaker reopened": "WARN", "circuit breaker closed": "INFO"} {
		for _, l := range lines[what] {
			if !strings.Contains(l, "level="+level+" ") {
				t.Errorf("%q logged at another level than %s: %s", what, level, l)
			}
			for _, want := range []string{"breaker=" + name, "queue=" + q, "kind=call"} {
				if !strings.Contains(l, want) {
					t.Errorf("the line of %q lacks %q: %s", what, want, l)
				}
			}
		}
	}
}

// A running process says at each heartbeat which breakers its handlers
// use, so that its users stay listed however long it runs.
func TestRunningProcessKeepsItsBreakerUsersListed(t *testing.T) {
	t.Parallel()
	s, q := storeAndQueue(t)
	name := uniqueName("kept")
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.ProcessHeartbeat = 20 * time.Millisecond })
	c.Handle("call", func(context.Context, *engine.Job) error { return nil },
		engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Second, MaxCoolOff: time.Minute}})
	pgtest.Start(t, c)
	ctx := pgtest.Context(t)
	users := func() []store.BreakerUser {
		all, err := s.ListBreakers(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) == 0 {
			return nil // not created yet
		}
		return all[0].Users
	}
	pgtest.Eventually(t, 30*time.Second, "the process's use of the breaker recorded", func() bool { return len(users()) == 1 })
	// As if the process had run for two days since.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.circuit_breaker_users SET seen_at = now() - interval '2 days' WHERE breaker = $1`, name); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the user listed again after a heartbeat", func() bool {
		u := users()
		return len(u) == 1 && u[0].Queue == q && u[0].Kind == "call" && time.Since(u[0].SeenAt) < time.Minute
	})
}

// A breaker deleted while a process runs (by hand, or by retention) is
// made anew, closed and with its users, at the next job that asks it, and
// keeps working: it opens again when the downstream fails.
func TestDeletedBreakerIsMadeAnew(t *testing.T) {
	t.Parallel()
	// A database of its own: the breaker is left open, which the health
	// of a shared one would report.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 20 * time.Millisecond })
	name := uniqueName("anew")
	var failing atomic.Bool
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	c.Handle("call", func(context.Context, *engine.Job) error {
		if failing.Load() {
			return errors.New("503 from the bank")
		}
		return nil
	}, engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Hour, MaxCoolOff: time.Hour}})
	pgtest.Start(t, c)
	ctx := pgtest.Context(t)
	pgtest.Send(t, c, q, 0, engine.SendOptions{Kind: "call"})
	pgtest.Eventually(t, 30*time.Second, "the first job archived", func() bool { return pgtest.Archived(t, s, q) == 1 })

	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgbus.circuit_breakers WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	for i := range 4 {
		pgtest.Send(t, c, q, i, engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, 30*time.Second, "the breaker made anew and opened", func() bool {
		all, err := s.ListBreakers(ctx, name)
		return err == nil && len(all) == 1 && all[0].State == store.BreakerOpen && len(all[0].Users) == 1
	})
	if out := logs.String(); strings.Contains(out, "circuit breaker unavailable") {
		t.Fatalf("a job ran without its breaker:\n%s", out)
	}
}

// A process whose rows retention removed while it was unheard of for
// longer than StatsRetention (its machine suspended, say) writes them again
// at its next heartbeat: pgbus workers lists it running, health counts its
// queues served, and its breaker keeps its users.
func TestHeartbeatRestoresPrunedRows(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // pruning reads the whole registry
	q := newQueue(t, s, nil)
	name := uniqueName("pruned")
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.ProcessHeartbeat = 50 * time.Millisecond })
	c.Handle("call", func(context.Context, *engine.Job) error { return nil },
		engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Hour, MaxCoolOff: time.Hour}})
	pgtest.Start(t, c)
	ctx := pgtest.Context(t)
	registered := func() bool {
		ws, err := s.ListWorkers(ctx, time.Hour)
		return err == nil && len(ws) == 1 && ws[0].ID == c.ID() && ws[0].StoppedAt == nil && len(ws[0].Queues) == 1 && ws[0].Queues[0] == q
	}
	used := func() bool {
		all, err := s.ListBreakers(ctx, name)
		return err == nil && len(all) == 1 && len(all[0].Users) == 1 && all[0].Users[0].Queue == q
	}
	pgtest.Eventually(t, 30*time.Second, "the process registered with its breaker's users", func() bool { return registered() && used() })

	// What retention deletes of a process unheard of for a week.
	if _, err := s.Pool().Exec(ctx, `WITH w AS (DELETE FROM pgbus.workers WHERE id = $1)
		DELETE FROM pgbus.circuit_breaker_users WHERE breaker = $2`, c.ID(), name); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the process listed again, running, with its breaker's users", func() bool { return registered() && used() })
}

// A process whose breaker exists with other settings (another process's,
// configured differently) says that its own replace them: processes that
// share a breaker took turns at its settings in silence. The same settings
// say nothing.
func TestBreakerOfOtherSettingsIsWarned(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("shared")
	theirs := store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: 30 * time.Second, MaxCoolOff: time.Minute}
	if err := s.EnsureBreaker(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ours store.BreakerConfig
		warn bool
	}{{theirs, false}, {store.BreakerConfig{Name: name, FailureThreshold: 50, CoolOff: time.Second, MaxCoolOff: time.Minute}, true}} {
		q := newQueue(t, s, nil)
		var logs pgtest.SyncBuffer
		client := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
		client.Handle("call", func(context.Context, *engine.Job) error { return nil }, engine.HandlerOptions{Breaker: &c.ours})
		stop := pgtest.Start(t, client)
		pgtest.Send(t, client, q, 1, engine.SendOptions{Kind: "call"})
		pgtest.Eventually(t, 30*time.Second, "the message done", func() bool { return pgtest.Archived(t, s, q) == 1 })
		stop()
		out := logs.String()
		if warned := strings.Contains(out, "exists with other settings"); warned != c.warn || c.warn && !strings.Contains(out, "failure threshold 2, cool-off 30s") {
			t.Errorf("breaker of settings %+v over %+v: warned %t, want %t:\n%s", c.ours, theirs, warned, c.warn, out)
		}
	}
}

// A handler whose breaker was turned off (or renamed) since the last start
// leaves the old breaker: its users are forgotten, so that it is no longer
// listed in use nor reported as holding the queue, and the jobs it held
// run at once rather than at the end of its open period.
func TestBreakerTurnedOffReleasesItsJobs(t *testing.T) {
	t.Parallel()
	// A database of its own: the breaker is left open.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 20 * time.Millisecond })
	name := uniqueName("off")
	ctx := pgtest.Context(t)
	before := pgtest.NewClient(t, s, q, nil)
	before.Handle("call", func(context.Context, *engine.Job) error { return errors.New("503 from the bank") },
		engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: name, FailureThreshold: 2, CoolOff: time.Hour, MaxCoolOff: time.Hour}})
	stop := pgtest.Start(t, before)
	for i := range 4 {
		pgtest.Send(t, before, q, i, engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, 30*time.Second, "every job held by the open breaker", func() bool {
		held, err := s.HeldByBreaker(ctx, name)
		return err == nil && held[name] == 4
	})
	stop()

	var logs pgtest.SyncBuffer
	after := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	after.Handle("call", func(context.Context, *engine.Job) error { return nil }, engine.HandlerOptions{})
	pgtest.Start(t, after)
	pgtest.Eventually(t, 30*time.Second, "the held jobs run without the breaker", func() bool { return pgtest.Archived(t, s, q) == 4 })
	all, err := s.ListBreakers(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || len(all[0].Users) != 0 {
		t.Errorf("the breaker no handler uses is listed with users: %+v", all)
	}
	if out := logs.String(); !strings.Contains(out, "breaker="+name) || !strings.Contains(out, "jobs=4") {
		t.Errorf("the release is not logged with its breaker and count:\n%s", out)
	}
}

// throttled is a downstream's refusal to take more: class http.429.
type throttled struct{}

func (throttled) Error() string      { return "POST https://api.example.com/x: 429 Too Many Requests" }
func (throttled) ErrorClass() string { return "http.429" }

// A failure a breaker counts is recorded with its error class and the wait
// the downstream asked for, so that health can tell a downstream limiting
// its rate from one that is down.
func TestBreakerRecordsTheClassOfItsLastFailure(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 50 })
	name := uniqueName("throttled")
	cfg := &store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("call", func(context.Context, *engine.Job) error {
		return engine.RetryAfter(30*time.Second, throttled{})
	}, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "call"})
	var b store.BreakerState
	pgtest.Eventually(t, 30*time.Second, "the breaker opened", func() bool {
		all, err := s.ListBreakers(context.Background(), name)
		if err != nil || len(all) != 1 {
			return false
		}
		b = all[0]
		return b.State == store.BreakerOpen
	})
	if b.LastErrorClass != "http.429" || b.LastRetryAfterMs != 30000 || !strings.Contains(b.LastError, "429") {
		t.Errorf("breaker = class %q, retry after %d ms, last error %q; want http.429, 30000 and the error", b.LastErrorClass, b.LastRetryAfterMs, b.LastError)
	}
}
