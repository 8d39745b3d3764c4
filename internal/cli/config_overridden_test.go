package cli_test

import (
	"strings"
	"testing"
)

// A bad value in the configuration file is refused even when a flag or
// an environment variable gives that setting, as the file is checked
// whole, for every command that reads it: the refusal says which flag or
// variable overrides it here, so that the person does not look for why
// their flag was not taken.
func TestBadFileValueOverriddenSaysWhatOverridesIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		env        []string
		args       []string
		says       string
	}{
		{"flag", "worker:\n  poll_interval: banana\n", nil, []string{"work", "--poll-interval", "2s", "--queue", "orders", "--handler", "demo"}, "--poll-interval overrides it for this command"},
		{"global flag", "log_level: loud\n", nil, []string{"queues", "--log-level", "info"}, "--log-level overrides it for this command"},
		{"variable", "log_level: loud\n", []string{"PGBUS_LOG_LEVEL=info"}, []string{"queues"}, "PGBUS_LOG_LEVEL overrides it for this command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, "pgbus.yaml", c.text)
			r := usageRun(t, c.env, append(c.args, "--config", path)...)
			if r.code != 2 || !strings.HasPrefix(r.stderr, "pgbus: config "+path) || !strings.Contains(r.stderr, c.says) || !strings.Contains(r.stderr, "correct it or remove the key") {
				t.Fatalf("exit %d, stderr %q\nwant the file's value refused, saying %q and what to do", r.code, r.stderr, c.says)
			}
		})
	}
}
