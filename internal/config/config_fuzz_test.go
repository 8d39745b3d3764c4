package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/store"
)

// FuzzParse: any file is refused with an *config.Error naming the file and
// giving a reason, or it is a configuration whose queue names and settings
// are valid, and which reads back the same once written out as YAML.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"log_level: info\nworker:\n  poll_interval: 1s\n  drain_timeout: 30s\n",
		"queues:\n  orders:\n    concurrency: 10\n    handler: {type: demo}\n    max_retries: 5\n    backoff: 5s\n    backoff_max: 5m\n",
		"queues:\n  thumbs:\n    handler:\n      type: exec\n      command: [\"/bin/true\"]\n      timeout: 1m\n    jitter: 0.15\n    strategy: polynomial\n",
		"queues:\n  Orders: {}\n",
		"queues:\n  orders:\n    concurrency: 1.5\n",
		"queues:\n  orders:\n    backoff: -1s\n",
		"queues:\n  orders_dlq: {}\n",
		"unknown: 1\n",
		"a: b\n---\nc: d\n",
		"log_level: [1, 2]\n",
		"worker:\n  poll_interval: 1ns\n",
		"queues: &a\n  x: *a\n",
		"queues: &a\n  x:\n    <<: *a\n",
		// Aliases of aliases: a million nodes for the checks to follow.
		"a0: &a0 {x: 1, y: 1.5}\na1: &a1 {p: *a0, q: *a0, r: *a0, s: *a0}\na2: &a2 {p: *a1, q: *a1, r: *a1, s: *a1}\na3: &a3 {p: *a2, q: *a2, r: *a2, s: *a2}\na4: &a4 {p: *a3, q: *a3, r: *a3, s: *a3}\na5: &a5 {p: *a4, q: *a4, r: *a4, s: *a4}\na6: &a6 {p: *a5, q: *a5, r: *a5, s: *a5}\na7: &a7 {p: *a6, q: *a6, r: *a6, s: *a6}\na8: &a8 {p: *a7, q: *a7, r: *a7, s: *a7}\na9: &a9 {p: *a8, q: *a8, r: *a8, s: *a8}\na10: &a10 {p: *a9, q: *a9, r: *a9, s: *a9}\nqueues:\n  q:\n    <<: *a10\n",
		"database_url: \"postgres://u@h/db\"\ndata_dir: /tmp/x\nlog_format: json\n",
		"\t- bad indent\n",
		"queues:\n  orders:\n    handler:\n      type: http\n      url: http://x\n      headers: {A: \"\\0\"}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("fuzz.yaml", data)
		if err != nil {
			var ce *config.Error
			if !errors.As(err, &ce) || ce.File != "fuzz.yaml" || ce.Reason == "" || !strings.HasPrefix(err.Error(), "config fuzz.yaml") {
				t.Fatalf("%q: error %v (%T) does not name the file and a reason", data, err, err)
			}
			return
		}
		for _, name := range cfg.QueueNames() {
			q, _ := cfg.Queue(name)
			if err := store.ValidateQueueName(name); err != nil {
				t.Fatalf("%q: queue %q accepted: %v", data, name, err)
			}
			if key, err := q.Settings.Check(); err != nil {
				t.Fatalf("%q: queue %q accepted with %s: %v", data, name, key, err)
			}
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("%q: cannot write the configuration back: %v", data, err)
		}
		back, err := config.Parse("fuzz.yaml", out)
		if err != nil {
			t.Fatalf("%q: written back as %q, it is refused: %v", data, out, err)
		}
		if !reflect.DeepEqual(exported(cfg), exported(back)) {
			t.Fatalf("%q: written back as %q, it reads %+v, not %+v", data, out, exported(back), exported(cfg))
		}
	})
}

// exported is what a configuration says, without where it came from; no
// queues and an empty list of queues say the same.
func exported(f *config.File) config.File {
	out := config.File{DatabaseURL: f.DatabaseURL, DataDir: f.DataDir, LogFormat: f.LogFormat, LogLevel: f.LogLevel, Worker: f.Worker, Queues: f.Queues}
	if len(out.Queues) == 0 {
		out.Queues = nil
	}
	return out
}
