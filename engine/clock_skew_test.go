package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A worker on a host whose clock is three hours ahead of the database
// server's (time synchronization broken on one host) runs a job whose
// deadline, an hour after the server's now, has not passed: it judges the
// deadline on the server's clock, as the sender and the other hosts do,
// rather than dead-letter the job unrun. It dates its stats by the
// server's minute, which the last hour's counts read, and warns of the
// skew. (The server's clock is set back here, which is the same.)
func TestWorkerJudgesDeadlinesOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	q := newQueue(t, st, nil)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	var ran atomic.Int32
	c.Handle("job", func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	var server time.Time
	if err := st.Pool().QueryRow(testContext(t), `SELECT now()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	pgtest.Send(t, c, q, json.RawMessage(`{}`), engine.SendOptions{Kind: "job", Deadline: server.Add(time.Hour)})
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the job to run or die", func() bool {
		return ran.Load() > 0 || pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`) > 0
	})
	if ran.Load() != 1 {
		t.Fatalf("the job ran %d times, and its DLQ holds %d; want it run once, its deadline an hour ahead on the server's clock",
			ran.Load(), pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`))
	}
	pgtest.Eventually(t, time.Minute, "the stats flushed", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = '`+q+`'`) > 0
	})
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = '`+q+`' AND minute > now() - interval '1 hour' AND minute <= now()`); n == 0 {
		t.Error("the job's stats are not in the last hour of the server's clock")
	}
	if !strings.Contains(logs.String(), "this host's clock is off from the database server's") {
		t.Errorf("no warning of the skew in the log:\n%s", logs.String())
	}
}

// The log line of a breaker that opens says when it lets a probe through on
// the database server's clock, on which the breaker's open period was
// written: with the server two hours ahead of this host, a breaker open for
// 10 seconds logs a probe in at most 10 seconds, not in two hours.
func TestBreakerOpeningLogsItsProbeOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "+2h")
	q := newQueue(t, st, func(qs *store.QueueSettings) { qs.MaxRetries = 50; qs.RetryBackoff = 20 * time.Millisecond })
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	coolOff := 10 * time.Second
	c.Handle("call", func(context.Context, *engine.Job) error { return errors.New("503 from the bank") },
		engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: uniqueName("skewed"), FailureThreshold: 2, CoolOff: coolOff, MaxCoolOff: coolOff}})
	pgtest.Start(t, c)
	for i := range 2 {
		pgtest.Send(t, c, q, i, engine.SendOptions{Kind: "call"})
	}
	pgtest.Eventually(t, time.Minute, "the opening logged", func() bool {
		return strings.Contains(logs.String(), "circuit breaker opened")
	})
	m := regexp.MustCompile(`circuit breaker opened.* probe_in=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("the opening logged no probe_in:\n%s", logs.String())
	}
	in, err := time.ParseDuration(m[1])
	if err != nil || in <= 0 || in > coolOff {
		t.Errorf("the opening logged probe_in=%s; want within the breaker's open period, %s", m[1], coolOff)
	}
}

// The warning of a skewed clock is said again when the skew changes by more
// than the threshold from what it last said (the server's clock set from 90
// seconds ahead to 5 minutes behind), but not again at every heartbeat
// while it stays as it was, and not again within a minute of the last.
func TestClockSkewWarnedAgainWhenItChanges(t *testing.T) {
	t.Parallel()
	st, shift := pgtest.ShiftingSkewedStore(t, "+90s")
	q := newQueue(t, st, nil)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := testContext(t)
	const warning = "this host's clock is off from the database server's"
	warnings := func() []string {
		var out []string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, warning) {
				out = append(out, line)
			}
		}
		return out
	}
	engine.SyncClock(ctx, c)
	engine.SyncClock(ctx, c)
	if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "server_ahead_by=1m") {
		t.Fatalf("with the server 90s ahead, measured twice, the log warned %d times: %q; want once, of the server about 1m30s ahead", len(w), w)
	}
	shift("-5m")
	pgtest.Eventually(t, time.Minute, "the server's clock set 5 minutes behind", func() bool {
		skew, err := st.SyncClock(ctx)
		return err == nil && skew < -4*time.Minute
	})
	engine.SyncClock(ctx, c)
	if w := warnings(); len(w) != 1 {
		t.Fatalf("the skew changed within a minute of the last warning, which the log said again: %q", w)
	}
	engine.AgeClockWarning(c)
	engine.SyncClock(ctx, c)
	w := warnings()
	if len(w) != 2 || !strings.Contains(w[1], "server_ahead_by=-4m") && !strings.Contains(w[1], "server_ahead_by=-5m") {
		t.Fatalf("the skew changed from +90s to -5m: the log warned %q; want a second warning, of the server about 5 minutes behind", w)
	}
	engine.AgeClockWarning(c)
	engine.SyncClock(ctx, c)
	if w := warnings(); len(w) != 2 {
		t.Errorf("the skew stayed at -5m, and the log warned again: %q", w)
	}
}
