package cli_test

import (
	"strings"
	"testing"
)

// pgbus work given a configuration file and a queue the file does not
// configure (a typo of one it does) says so, naming the queues it
// configures: it said to give the queue a handler in a file passed with
// --config, which it had been.
func TestWorkQueueTheFileDoesNotConfigure(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := writeFile(t, "pgbus.yaml", "queues:\n  reports:\n    handler: {type: demo}\n  webhooks:\n    handler: {type: demo}\n")
	msg := d.fails(t, 2, "work", "--config", cfg, "--queue", "webhook")
	for _, want := range []string{`the configuration file ` + cfg + ` configures no queue "webhook" (it configures: reports, webhooks)`, "name one of them", "--handler"} {
		if !strings.Contains(msg, want) {
			t.Errorf("work --queue webhook with a file configuring webhooks: %q; want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "passed with --config") {
		t.Errorf("work --queue webhook with --config given: %q; tells to pass --config", msg)
	}
	// Without a file, it still says how to give the queue a handler.
	if msg := d.fails(t, 2, "work", "--queue", "webhook"); !strings.Contains(msg, "passed with --config") || !strings.Contains(msg, "--handler demo") {
		t.Errorf("work --queue webhook without a file: %q; want it to say to pass --config or --handler", msg)
	}
}
