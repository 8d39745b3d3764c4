package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
)

// A top-level block whose key starts with x- holds YAML anchors for the
// rest of the file to reuse, as compose files write them: pgbus reads
// nothing of it, and reads the aliases and merges that name its anchors.
// Any other unknown key is refused, naming the x- keys it would take.
func TestExtensionKeysHoldAnchors(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("pgbus.yaml", []byte(`
x-defaults: &defaults
  max_retries: 7
  handler: {type: demo}
x-notes: anything at all
queues:
  orders:
    <<: *defaults
    concurrency: 3
  emails: *defaults
`))
	if err != nil {
		t.Fatalf("a file with x- blocks of anchors: %v", err)
	}
	for _, name := range []string{"orders", "emails"} {
		q, ok := cfg.Queue(name)
		if !ok || q.Handler == nil || q.Handler.Type != "demo" || q.MaxRetries == nil || *q.MaxRetries != 7 {
			t.Errorf("queue %s: %+v; want the handler and max_retries of x-defaults", name, q)
		}
	}
	_, err = config.Parse("pgbus.yaml", []byte("queues: {}\ndefaults: &d\n  max_retries: 7\n"))
	if err == nil || !strings.Contains(err.Error(), `pgbus.yaml:2: defaults: unknown key "defaults"`) || !strings.Contains(err.Error(), "x-") {
		t.Errorf("an unknown key without x-: %v; want it refused at its line, naming x- keys", err)
	}
}
