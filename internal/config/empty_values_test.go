package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
)

// An empty string is refused for every setting of the file, in the same
// words, as an environment variable set but empty is: some keys read it
// as their default and others refused it in words of their type ("not a
// duration", "expected true or false"), so a template whose variable came
// through empty ran otherwise than it was told, or was refused unclearly.
// A key with nothing after it is a key left out; the values a handler or
// the alerts pass on as they are (an exec command's env, headers), and
// anything in an x- block, may be empty.
func TestEmptyStringsAreRefusedAlike(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`data_dir: ""`, `log_format: ""`, `log_level: ""`, `no_embedded: ""`,
		"worker:\n  poll_interval: \"\"", "worker:\n  no_listen: \"\"",
		`audit_retention: ""`, `safe_fields: [""]`,
		"queues:\n  q:\n    strategy: \"\"", "queues:\n  q:\n    concurrency: \"\"", "queues:\n  q:\n    jitter: \"\"",
		"queues:\n  q:\n    handler: {type: http, url: \"\"}", "queues:\n  q:\n    handler: {type: demo, latency: \"\"}",
		"alerts:\n  url: \"\"",
	} {
		_, err := config.Parse("p.yaml", []byte(doc+"\n"))
		if err == nil || !strings.Contains(err.Error(), `empty`) || !strings.Contains(err.Error(), "leave the key out") {
			t.Errorf("%q: %v; want it refused as empty, saying to leave the key out for its default", doc, err)
		}
	}
	for _, doc := range []string{
		"log_level:\nworker:\n  poll_interval:\n", // nothing after the key: left out
		"queues:\n  q:\n    handler: {type: exec, command: [/bin/true], env: {EMPTY: \"\"}}",
		"queues:\n  q:\n    handler: {type: http, url: \"http://x\", headers: {X-Empty: \"\"}}",
		"x-defaults:\n  note: \"\"\n",
	} {
		if _, err := config.Parse("p.yaml", []byte(doc+"\n")); err != nil {
			t.Errorf("%q: %v; want it read", doc, err)
		}
	}
}
