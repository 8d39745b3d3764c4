package cli_test

import (
	"strings"
	"testing"
)

// The next step that starts a worker for a queue no worker serves runs as
// written: the demo's queues with the demo handler, a queue the
// configuration file gives a handler with that one (no --handler), and a
// queue with no known handler as a template whose handler type is still
// to be chosen, never as a command that fails for want of a handler. The
// --config the command was given is carried, without which the second
// would have no handler.
func TestWorkHintRunsAsWritten(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := writeFile(t, "pgbus.yaml", "queues:\n  billing:\n    handler:\n      type: demo\n      latency: 1ms\n")
	for _, q := range []string{"demo_emails", "billing", "orders"} {
		d.ok(t, "queue", "create", q)
		d.ok(t, "send", q, `{"amount_cents": 0}`)
	}
	// hintFor returns the work command health names for queue, as it
	// is printed.
	hintFor := func(out, queue string) string {
		for _, line := range strings.Split(out, "\n") {
			if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "next: pgbus work --queue "+queue); ok {
				cmd, _, _ = strings.Cut(cmd, "   #")
				return "pgbus work --queue " + queue + cmd
			}
		}
		t.Fatalf("no next step starts a worker for %s:\n%s", queue, out)
		return ""
	}
	health := d.ok(t, "--config", cfg, "health")
	for queue, want := range map[string]string{
		"demo_emails": "pgbus work --queue demo_emails --handler demo --config " + cfg,
		"billing":     "pgbus work --queue billing --config " + cfg,
		"orders":      "pgbus work --queue orders --handler TYPE --config " + cfg,
	} {
		if got := hintFor(health, queue); got != want {
			t.Errorf("health names %q for %s, want %q", got, queue, want)
		}
	}
	// Run as written (stopping once the queue is idle), the first two
	// work their queue empty.
	for _, queue := range []string{"demo_emails", "billing"} {
		args := append(strings.Fields(hintFor(health, queue))[1:], "--until-idle")
		d.ok(t, args...)
		if s := d.stats(t, queue); s.Depth != 0 {
			t.Errorf("%q left %d messages in %s", strings.Join(args, " "), s.Depth, queue)
		}
	}
	// A retry into a queue without a worker names the same step, and its
	// why says which handler types there are to choose from.
	d.ok(t, "queue", "pause", "orders")
	resume := d.ok(t, "queue", "resume", "orders")
	if !strings.Contains(resume, "next: pgbus work --queue orders --handler TYPE   # start a worker, choosing its handler: demo, or exec or http") {
		t.Errorf("resume of a queue without a worker or a configured handler:\n%s", resume)
	}
	if !strings.Contains(d.ok(t, "queue", "resume", "demo_emails"), "next: pgbus work --queue demo_emails --handler demo") {
		t.Error("resume of a demo queue does not name the demo handler")
	}
}

// An agent over pgbus serve is given the same runnable step for a demo
// queue: the command it hands to an operator names the demo handler.
func TestServeWorkHintNamesTheDemoHandler(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "demo_emails")
	d.ok(t, "send", "demo_emails", `{"to": "ada@example.com"}`)
	c, _, _ := serveStdio(t, "--database-url", d.url)
	text := toolText(callTool(t, c, "pgbus_health", map[string]any{}))
	if !strings.Contains(text, `"command":"pgbus work --queue demo_emails --handler demo --database-url `) {
		t.Errorf("pgbus_health does not name the demo handler:\n%s", text)
	}
}
