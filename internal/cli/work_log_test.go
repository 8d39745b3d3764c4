package cli_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/exectest"
)

// pgbus work at the default level tells a person watching what matters:
// each dead-letter with its queue, id, kind, class and error, and a
// summary of the run per queue at exit; each success and retry stays at
// debug.
func TestWorkLogsDeadLettersAndSummaryAtInfo(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := execQueue(t, d, "charges", 2, "if grep -q decline; then echo 'card declined by the bank' >&2; exit 75; fi\nexit 0\n")
	d.ok(t, "send", "charges", `{"card": "ok"}`)
	d.ok(t, "send", "charges", `{"card": "ok"}`)
	d.ok(t, "send", "charges", `{"card": "decline"}`, "--kind", "charge")
	r := pgbus(t, d.env, "work", "--config", cfg, "--until-idle", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("work: exit %d: %s", r.code, r.stderr)
	}
	var dead, summary, stopped []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		switch rec["msg"] {
		case "pgbus: job dead-lettered":
			dead = append(dead, rec)
		case "pgbus: summary of this run":
			summary = append(summary, rec)
		case "pgbus work: stopped":
			stopped = append(stopped, rec)
		case "pgbus: job done", "pgbus: job failed":
			t.Errorf("a job's outcome logged at the default level: %s", line)
		}
	}
	if len(dead) != 1 {
		t.Fatalf("%d dead-letters logged, want 1:\n%s", len(dead), r.stderr)
	}
	rec := dead[0]
	if rec["level"] != "INFO" || rec["queue"] != "charges" || rec["kind"] != "charge" || rec["msg_id"] == nil ||
		rec["reason"] != "max_retries_exceeded" || rec["error_class"] == "" || rec["error"] != nil {
		t.Errorf("the dead-letter line: %v", rec)
	}
	// Its error under err, as every other line's.
	if e, _ := rec["err"].(string); !strings.Contains(e, "card declined") {
		t.Errorf("the dead-letter line's err: %v; want the handler's error", rec)
	}
	// The worker that stopped is named, as its start line names it.
	if len(stopped) != 1 || stopped[0]["worker"] == nil || stopped[0]["worker"] == "" {
		t.Errorf("the stop lines: %v; want one naming its worker", stopped)
	}
	if len(summary) != 1 {
		t.Fatalf("%d summary lines, want 1:\n%s", len(summary), r.stderr)
	}
	if s := summary[0]; s["queue"] != "charges" || s["succeeded"] != 2.0 || s["retried"] != 1.0 || s["dead_lettered"] != 1.0 {
		t.Errorf("the summary: %v", s)
	}
}

// The summary at exit has a line for each queue worked, one that settled
// nothing included, when another queue worked beside it has a name that
// starts like a priority level of it (orders and orders_payments), where
// that one's line was taken for its level's and it had none.
func TestWorkSummaryNamesEveryQueue(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "queue", "create", "orders_payments")
	d.ok(t, "send", "orders_payments", `{"simulate": "ok"}`)
	r := pgbus(t, d.env, "work", "--queue", "orders", "--queue", "orders_payments", "--handler", "demo", "--until-idle", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("work: exit %d: %s", r.code, r.stderr)
	}
	summary := map[any]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		if rec["msg"] == "pgbus: summary of this run" {
			summary[rec["queue"]] = rec
		}
	}
	if len(summary) != 2 || summary["orders"]["succeeded"] != 0.0 || summary["orders_payments"]["succeeded"] != 1.0 {
		t.Fatalf("summary lines %v, want one for orders (0 succeeded) and one for orders_payments (1):\n%s", summary, r.stderr)
	}
}

// The text log keeps a job's error whole, however broken the downstream's
// output in it: the bytes that are not UTF-8 and the escape sequence
// before the reason were once taken for the end of the value, and the
// reason was lost. Nothing of them reaches the terminal raw.
func TestWorkTextLogKeepsABrokenErrorWhole(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := execQueue(t, d, "charges", 1, "printf 'gateway said \\377\\376 \\033[31mcard declined\\033[0m by the bank\\n' >&2\nexit 3\n")
	d.ok(t, "send", "charges", `{"card": "4242"}`)
	r := pgbus(t, d.env, "work", "--config", cfg, "--until-idle", "--log-format", "text")
	if r.code != 0 {
		t.Fatalf("work: exit %d: %s", r.code, r.stderr)
	}
	var dead string
	for line := range strings.Lines(r.stderr) {
		if strings.Contains(line, "pgbus: job dead-lettered") {
			dead = line
		}
	}
	if !strings.Contains(dead, "card declined") || !strings.Contains(dead, "by the bank") {
		t.Errorf("the dead-letter line lost the error's reason:\n%q", r.stderr)
	}
	if strings.ContainsRune(r.stderr, '\x1b') || !utf8.ValidString(r.stderr) {
		t.Errorf("the log holds a raw escape sequence or a byte that is not UTF-8:\n%q", r.stderr)
	}
}

// execQueue declares queue in a configuration file, its jobs run by a
// shell script of body and dead-lettered after maxRetries runs, creates it
// with a first pgbus work, and returns the file's path.
func execQueue(t *testing.T, d db, queue string, maxRetries int, body string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), queue+".sh")
	exectest.WriteFile(t, script, "#!/bin/sh\n"+body, 0o755)
	cfg := writeFile(t, "pgbus.yaml", fmt.Sprintf(`
queues:
  %s:
    max_retries: %d
    backoff: 10ms
    handler:
      type: exec
      command: [%s]
`, queue, maxRetries, script))
	d.ok(t, "work", "--config", cfg, "--until-idle")
	return cfg
}
