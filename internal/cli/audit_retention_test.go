package cli_test

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// agedAudit gives the database of d audit entries 40 and 100 days old,
// and a per-minute counter past its retention, which the retention pass
// prunes after the audit log: once it is gone, the log has been pruned.
func agedAudit(t *testing.T, d db) {
	t.Helper()
	d.ok(t, "migrate")
	pgtest.Exec(t, d.url, `INSERT INTO pgbus.audit_log (at, client, tool) VALUES
		(now() - interval '100 days', 'cli', 'aged_100d'), (now() - interval '40 days', 'cli', 'aged_40d');
		INSERT INTO pgbus.stats_minute (minute, queue_name, kind, succeeded) VALUES (date_trunc('minute', now()) - interval '8 days', 'marker', '', 1)`)
}

// agedLeft lists the aged entries left, oldest first.
func agedLeft(t *testing.T, d db) string {
	t.Helper()
	var left string
	d.query(t, `SELECT coalesce(string_agg(tool, ' ' ORDER BY at), '') FROM pgbus.audit_log WHERE tool LIKE 'aged_%'`, &left)
	return left
}

// The configuration file's audit_retention reaches the retention of the
// processes that run workers: pgbus work, pgbus serve with workers and
// pgbus demo. 720h prunes an entry of 40 days, which the default (90 days)
// keeps; off keeps one of 100 days, which the default prunes.
func TestAuditRetentionFromConfigFile(t *testing.T) {
	t.Parallel()
	const queues = `
queues:
  kept:
    handler: {type: demo}
`
	for _, c := range []struct {
		name string
		args []string
		file string
		want string
	}{
		{"work", []string{"work"}, "audit_retention: 720h\n" + queues, ""},
		{"serve", []string{"serve", "--transport", "http", "--addr", "127.0.0.1:0"}, "audit_retention: off\n" + queues, "aged_100d aged_40d"},
		{"work by default", []string{"work"}, queues, "aged_40d"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDB(t)
			agedAudit(t, d)
			cfg := writeFile(t, "pgbus.yaml", c.file)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, append(c.args, "--config", cfg, "--log-format", "json")...)
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
			if got := agedLeft(t, d); got != c.want {
				t.Fatalf("aged audit entries left: %q, want %q\n%s", got, c.want, logs.String())
			}
		})
	}
	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		d := newDB(t)
		agedAudit(t, d)
		d.ok(t, "demo", "--config", writeFile(t, "pgbus.yaml", "audit_retention: 720h\n"))
		if d.count(t, `SELECT count(*) FROM pgbus.stats_minute WHERE queue_name = 'marker'`) != 0 {
			t.Fatal("the demo's workers ran no retention pass")
		}
		if got := agedLeft(t, d); got != "" {
			t.Fatalf("aged audit entries left after the demo: %q, want none", got)
		}
	})
}

// A bad audit_retention stops pgbus at start with the file, line, key and
// what to write instead (exit 2).
func TestAuditRetentionBadValue(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	for text, want := range map[string]string{
		"audit_retention: 90 days\n": `pgbus.yaml:1: audit_retention: "90 days" is not a duration or off: write days or hours, such as 90d or 2160h, or off to keep every entry`,
		"audit_retention: -1h\n":     `pgbus.yaml:1: audit_retention: "-1h" is negative`,
		"audit_retention: 0\n":       `pgbus.yaml:1: audit_retention: 0s is out of range 1m..87600h (ten years): 2160h keeps 90 days, off keeps every entry`,
	} {
		stderr := d.fails(t, 2, "work", "--queue", "q", "--handler", "demo", "--config", writeFile(t, "pgbus.yaml", text))
		if !strings.Contains(stderr, want) {
			t.Errorf("%q: stderr %q, want %q", text, stderr, want)
		}
	}
}
