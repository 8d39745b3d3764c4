package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/store"
)

// Workers whose pgbus schema is dropped under them meet it at every job's
// circuit breaker, every outcome write and every settings refresh: the log
// says so once a minute, in one warning that names what is gone and the
// next step (migrate the database), not a warning per job, breaker and
// refresh.
func TestSchemaGoneWarnedOnceAMinute(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, s, nil)
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = log })
	var after atomic.Int64
	ran := make(chan struct{}, 100)
	cfg := &store.BreakerConfig{Name: "bank", FailureThreshold: 100, CoolOff: time.Second, MaxCoolOff: 2 * time.Second}
	c.Handle("call", func(_ context.Context, j *engine.Job) error {
		if strings.Contains(string(j.Payload), "after") {
			after.Add(1)
		}
		ran <- struct{}{}
		return errors.New("503 from the bank")
	}, engine.HandlerOptions{Breaker: cfg})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, "before", engine.SendOptions{Kind: "call"})
	<-ran // running, its breaker made
	mark, dropped := len(logs.String()), time.Now()
	pgtest.ExecPastDeadlocks(t, ctx, s, `DROP SCHEMA pgbus CASCADE`)
	for i := range 12 {
		if _, err := s.Pool().Exec(ctx, fmt.Sprintf(`INSERT INTO pgmq.%q (vt, message, headers) VALUES (now(), '"after %d"', '{"pgbus_kind": "call"}')`, "q_"+q, i)); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, time.Minute, "jobs run after the drop", func() bool { return after.Load() >= 2 })
	pgtest.Eventually(t, time.Minute, "the schema's warning", func() bool { return strings.Contains(logs.String()[mark:], "pgbus schema") })
	since := logs.String()[mark:]
	var schema, others []string
	for l := range strings.Lines(since) {
		switch {
		case !strings.Contains(l, "level=WARN"):
		case strings.Contains(l, "pgbus schema"):
			schema = append(schema, l)
		default:
			others = append(others, l)
		}
	}
	if most := 1 + int(time.Since(dropped)/quietlog.Every); len(schema) < 1 || len(schema) > most {
		t.Errorf("%d warnings of the schema gone in %s; want 1 a minute:\n%s", len(schema), time.Since(dropped).Round(time.Second), since)
	}
	for _, l := range schema {
		for _, want := range []string{"pgbus.", "migrate the database"} {
			if !strings.Contains(l, want) {
				t.Errorf("the warning of the schema gone lacks %q: %s", want, l)
			}
		}
	}
	if len(others) > 0 {
		t.Errorf("other warnings while the schema is gone (breakers, outcomes, refreshes), which its warning says:\n%s", strings.Join(others, ""))
	}
}
