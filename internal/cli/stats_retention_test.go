package cli_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The configuration file's stats_retention reaches the retention of the
// processes that run workers: 2d prunes a counter of 3 days, which the
// default (7 days) keeps, as it prunes one of 8 days either way.
func TestStatsRetentionFromConfigFile(t *testing.T) {
	t.Parallel()
	const queues = `
queues:
  kept:
    handler: {type: demo}
`
	for _, c := range []struct {
		name string
		file string
		want string
	}{
		{"stats_retention: 2d", "stats_retention: 2d\n" + queues, "d1"},
		{"by default", queues, "d3 d1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDB(t)
			d.ok(t, "migrate")
			pgtest.Exec(t, d.url, `INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES
				(date_trunc('minute', now()) - interval '8 days', 'marker', '', 1),
				(date_trunc('minute', now()) - interval '3 days', 'd3', '', 1),
				(date_trunc('minute', now()) - interval '1 day', 'd1', '', 1)`)
			cfg := writeFile(t, "pgbus.yaml", c.file)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "work", "--config", cfg, "--log-format", "json")
			cmd.Env = append(baseEnv(), d.env...)
			var logs pgtest.SyncBuffer
			cmd.Stderr = &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			pgtest.Eventually(t, time.Minute, "the retention pass", func() bool {
				return d.count(t, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = 'marker'`) == 0
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
			}
			var left string
			d.query(t, `SELECT coalesce(string_agg(queue_name, ' ' ORDER BY minute), '') FROM pgbus.stats_minute WHERE queue_name IN ('d3', 'd1')`, &left)
			if left != c.want {
				t.Fatalf("counters left: %q, want %q\n%s", left, c.want, logs.String())
			}
		})
	}
}
