package cli_test

import (
	"strings"
	"testing"
)

// Two queues of a configuration file whose handlers name one circuit
// breaker with different settings are refused before anything is written:
// the refusal came once the workers started, after the file's queues were
// created and their settings changed, though exit 2 says nothing was.
func TestConflictingBreakersChangeNothing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	d.ok(t, "queue", "create", "sha", "--max-retries", "10")
	cfg := writeFile(t, "cfg.yaml", `
queues:
  sha:
    max_retries: 7
    handler: {type: exec, command: [/bin/sh, -c, "exit 75"], breaker: {name: shared, failure_threshold: 3}}
  shnew:
    handler: {type: exec, command: [/bin/sh, -c, "exit 0"], breaker: {name: shared}}
`)
	msg := d.fails(t, 2, "--config", cfg, "work", "--until-idle")
	if !strings.Contains(msg, `cfg.yaml:7: queues.shnew.handler.breaker: circuit breaker "shared" is configured twice with different settings`) || !strings.Contains(msg, "for queue sha (line 5)") || !strings.Contains(msg, "for queue shnew;") {
		t.Fatalf("work with a breaker configured twice: %q; want the refusal at the second's line, naming both queues and the first's line", msg)
	}
	out := d.ok(t, "queues")
	if strings.Contains(out, "shnew") || queuesRow(t, out, "sha")["MAX RUNS"] != "10" {
		t.Fatalf("the refused file changed the queues:\n%s", out)
	}
}
