package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A duration of Config given as a bare number, meant as seconds or days
// but read as nanoseconds (DrainTimeout: 30, AuditRetention: 90), or
// below the least the configuration file takes of the same setting, is
// refused, naming the field, its least value and a time.Duration to give
// instead; that least value is taken, and zero keeps the default.
func TestNewClientRefusesDurationsBelowTheirLeast(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := uniqueName("q")
	for _, c := range []struct {
		field string
		set   func(*engine.Config, time.Duration)
		bad   time.Duration
		least time.Duration
		give  string // the time.Duration the error suggests
	}{
		{"PollInterval", func(c *engine.Config, d time.Duration) { c.PollInterval = d }, 2, engine.MinPollInterval, "2 * time.Second"},
		{"PollInterval", func(c *engine.Config, d time.Duration) { c.PollInterval = d }, 5 * time.Millisecond, engine.MinPollInterval, "2 * time.Second"},
		{"VisibilityHeartbeat", func(c *engine.Config, d time.Duration) { c.VisibilityHeartbeat = d }, 2, engine.MinInterval, "2 * time.Second"},
		{"ProcessHeartbeat", func(c *engine.Config, d time.Duration) { c.ProcessHeartbeat = d }, 10, engine.MinInterval, "10 * time.Second"},
		{"SettingsRefresh", func(c *engine.Config, d time.Duration) { c.SettingsRefresh = d }, 2, engine.MinInterval, "2 * time.Second"},
		{"StatsFlush", func(c *engine.Config, d time.Duration) { c.StatsFlush = d }, 5, engine.MinInterval, "5 * time.Second"},
		{"RetentionInterval", func(c *engine.Config, d time.Duration) { c.RetentionInterval = d }, 600, engine.MinInterval, "10 * time.Minute"},
		{"DrainTimeout", func(c *engine.Config, d time.Duration) { c.DrainTimeout = d }, 30, engine.MinDrainTimeout, "30 * time.Second"},
		{"HandlerGrace", func(c *engine.Config, d time.Duration) { c.HandlerGrace = d }, 5, engine.MinHandlerGrace, "5 * time.Second"},
		{"AuditRetention", func(c *engine.Config, d time.Duration) { c.AuditRetention = d }, 90, engine.MinAuditRetention, "90 * 24 * time.Hour"},
		{"AuditRetention", func(c *engine.Config, d time.Duration) { c.AuditRetention = d }, 30 * time.Second, engine.MinAuditRetention, "90 * 24 * time.Hour"},
		{"StatsRetention", func(c *engine.Config, d time.Duration) { c.StatsRetention = d }, 7, engine.MinStatsRetention, "7 * 24 * time.Hour"},
		{"StatsRetention", func(c *engine.Config, d time.Duration) { c.StatsRetention = d }, time.Hour, engine.MinStatsRetention, "7 * 24 * time.Hour"},
	} {
		cfg := engine.Config{Queues: []engine.QueueConfig{{Name: q}}}
		c.set(&cfg, c.bad)
		cl, err := engine.NewClient(s, cfg)
		want := "Config." + c.field + " " + c.bad.String() + " is shorter than " + c.least.String()
		if cl != nil || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "such as "+c.give) {
			t.Errorf("%s %s: NewClient made a client: %t, err %v; want ErrInvalid saying %q and suggesting %s", c.field, c.bad, cl != nil, err, want, c.give)
		}
		for _, ok := range []time.Duration{c.least, 0} {
			c.set(&cfg, ok)
			if cl, err := engine.NewClient(s, cfg); cl == nil || err != nil {
				t.Errorf("%s %s: NewClient made a client: %t, err %v; want a client", c.field, ok, cl != nil, err)
			}
		}
	}
}

// A client given AuditRetention 90 (90ns, meant as days) is refused, and
// the shared audit log keeps its entries: it was taken, and its first
// retention pass deleted every entry but those of the last 90ns.
func TestBareAuditRetentionKeepsTheAuditLog(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // retention prunes the whole database
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	// 35 entries, the newest 30s old; and a per-minute counter past its
	// retention, which the pass prunes after the audit log.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.audit_log (at, client, tool)
		SELECT now() - interval '30 seconds' - i * interval '1 minute', 'cli', 'op' FROM generate_series(0, 34) i;
		INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', '`+q+`', '', 1)`); err != nil {
		t.Fatal(err)
	}
	cl, err := engine.NewClient(s, engine.Config{Queues: []engine.QueueConfig{{Name: q}}, PollInterval: 50 * time.Millisecond, AuditRetention: 90})
	if err == nil {
		cl.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
		pgtest.Start(t, cl)
		pgtest.Eventually(t, 30*time.Second, "the retention pass", func() bool {
			return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = $1`, q) == 0
		})
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log`); err == nil || !errors.Is(err, store.ErrInvalid) || n != 35 {
		t.Fatalf("NewClient with AuditRetention 90: err %v, and the audit log holds %d entries; want ErrInvalid and all 35 kept", err, n)
	}
}
