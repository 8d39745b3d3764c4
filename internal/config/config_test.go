package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/store"
)

const full = `
database_url: postgres://app@db/app
data_dir: /var/lib/pgbus
log_format: json
log_level: debug
worker:
  poll_interval: 250ms
  drain_timeout: 1m
  database_call_timeout: 5s
queues:
  orders:
    concurrency: 4
    handler:
      type: demo
      timeout: 2s
      latency: 5ms
    max_retries: 7
    visibility_timeout: 45s
    strategy: polynomial
    backoff: 3s
    backoff_max: 10m
    jitter: 0.3
    delete_on_success: true
  emails: {}
`

func TestParseFull(t *testing.T) {
	f, err := config.Parse("pgbus.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if f.DatabaseURL != "postgres://app@db/app" || f.DataDir != "/var/lib/pgbus" || f.LogFormat != "json" || f.LogLevel != "debug" {
		t.Fatalf("top level: %+v", f)
	}
	if f.Worker.PollInterval.D() != 250*time.Millisecond || f.Worker.DrainTimeout.D() != time.Minute || f.Worker.DatabaseCallTimeout.D() != 5*time.Second {
		t.Fatalf("worker: %+v", f.Worker)
	}
	if got := f.QueueNames(); strings.Join(got, ",") != "emails,orders" {
		t.Fatalf("queue names %v", got)
	}
	q, ok := f.Queue("orders")
	if !ok || q.Concurrency != 4 || q.Handler == nil || q.Handler.Type != "demo" || q.Handler.Timeout.D() != 2*time.Second || q.Handler.Options["latency"] != "5ms" {
		t.Fatalf("orders: %+v %+v", q, q.Handler)
	}
	s := q.Settings.Apply(store.DefaultQueueSettings("orders"))
	want := store.QueueSettings{Queue: "orders", MaxRetries: 7, VisibilityTimeout: 45 * time.Second, BackoffStrategy: "polynomial",
		RetryBackoff: 3 * time.Second, RetryBackoffMax: 10 * time.Minute, RetryBackoffJitter: 0.3, DeleteOnSuccess: true}
	want.ArchiveRetention, want.DeadRetention = s.ArchiveRetention, s.DeadRetention
	if s != want {
		t.Fatalf("settings\n got %+v\nwant %+v", s, want)
	}
	if e, _ := f.Queue("emails"); !e.Settings.IsZero() || e.Handler != nil {
		t.Fatalf("emails: %+v", e)
	}
}

func TestEmptyAndNil(t *testing.T) {
	f, err := config.Parse("empty.yaml", nil)
	if err != nil || len(f.QueueNames()) != 0 {
		t.Fatalf("empty file: %v %v", f, err)
	}
	var none *config.File
	if none.Path() != "" || none.QueueNames() != nil {
		t.Fatal("nil File is not empty")
	}
	if _, ok := none.Queue("x"); ok {
		t.Fatal("nil File has a queue")
	}
}

func TestSettingsOverAndApply(t *testing.T) {
	three, nine := 3, 9
	long := config.Duration(time.Minute)
	file := config.Settings{MaxRetries: &nine, Strategy: "polynomial"}
	flags := config.Settings{MaxRetries: &three, Backoff: &long}
	got := flags.Over(file)
	if *got.MaxRetries != 3 || got.Strategy != "polynomial" || got.Backoff.D() != time.Minute {
		t.Fatalf("Over: %+v", got)
	}
	// A backoff longer than the default maximum raises the maximum.
	s := config.Settings{Backoff: &long}.Apply(store.QueueSettings{RetryBackoff: time.Second, RetryBackoffMax: 30 * time.Second})
	if s.RetryBackoff != time.Minute || s.RetryBackoffMax != time.Minute {
		t.Fatalf("Apply: %+v", s)
	}
	// A max under the backoff caps every exponential delay below it; the
	// polynomial strategy has no base, so its max alone bounds it.
	short := config.Duration(2 * time.Second)
	for strategy, wantKey := range map[string]string{"exponential": "backoff_max", "polynomial": ""} {
		if key, err := (config.Settings{Strategy: strategy, Backoff: &long, BackoffMax: &short}).Check(); key != wantKey {
			t.Errorf("%s with a max under its backoff: Check = %q, %v; want key %q", strategy, key, err, wantKey)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		text, key string
		line      int
		reason    string
	}{
		{"log_levle: info\n", "log_levle", 1, `unknown key "log_levle"; known keys here: database_url, data_dir, no_embedded, log_format, log_level, worker, queues`},
		{"log_levle: info\nlog_formt: json\n", "log_levle", 1, `unknown key "log_levle"; known keys here: database_url, data_dir, no_embedded, log_format, log_level, worker, queues, safe_fields, alerts, audit_retention, stats_retention, and keys starting with x-, which pgbus ignores (for YAML anchors to reuse) (and 1 more problem)`},
		{"worker:\n  poll: 1s\n", "worker.poll", 2, `unknown key "poll"; known keys here: poll_interval, drain_timeout, no_listen, database_call_timeout`},
		{"queues:\n  a:\n    concurrency: -1\n", "queues.a.concurrency", 3, "-1 is out of range 1..10000"},
		{"queues:\n  a:\n    concurrency: 1.5\n", "queues.a.concurrency", 3, "is not a whole number"},
		{"queues:\n  a:\n    concurrency: 0\n", "queues.a.concurrency", 3, "0 is out of range 1..10000"},
		{"queues:\n  a:\n    handler:\n      type: http\n      url: https://example.com/hook\n      timeout: 0\n", "queues.a.handler.timeout", 6, "0 is no limit"},
		{"queues:\n  a:\n    handler: {type: demo, timeout: 0s}\n", "queues.a.handler.timeout", 3, "0 is no limit"},
		{"queues:\n  a:\n    max_retries: 2.0\n", "queues.a.max_retries", 3, "is not a whole number"},
		{"queues:\n  a: &base\n    concurrency: 2\n  b:\n    <<: {concurrency: 1.5}\n", "queues.b.concurrency", 5, "is not a whole number"},
		{"queues:\n  a: &base {max_retries: 2.5, concurrency: 2}\n  b: *base\n", "queues.a.max_retries", 2, "is not a whole number"},
		{"x: &n {concurrency: 1.5}\n", "x", 1, "unknown key"},
		{"queues:\n  a: {concurrency: 2}\n  b:\n    <<: [{max_retries: 3}, {max_retries: 0.5, concurrency: 7.5}]\n", "queues.b.concurrency", 4, "is not a whole number"},
		{"queues:\n  a:\n    jitter: lots\n", "queues.a.jitter", 3, `"lots" is not a number`},
		{"queues:\n  a:\n    delete_on_success: maybe\n", "queues.a.delete_on_success", 3, `"maybe" is not true or false`},
		{"queues:\n  a:\n    backoff: 1m\n    backoff_max: 1s\n", "queues.a.backoff_max", 4, "less than backoff"},
		{"queues:\n  a:\n    visibility_timeout: 100ms\n", "queues.a.visibility_timeout", 3, "out of range 1s..24h"},
		{"queues:\n  a:\n    max_retries: 5000\n", "queues.a.max_retries", 3, "out of range 1..1000"},
		{"queues:\n  a:\n    archive_retention: 30s\n", "queues.a.archive_retention", 3, "out of range 1m..87600h"},
		{"queues:\n  a:\n    dead_retention: 30x\n", "queues.a.dead_retention", 3, "is not a duration"},
		// Negative days are negative, as -72h is, not "not a duration".
		{"queues:\n  a:\n    archive_retention: -3d\n", "queues.a.archive_retention", 3, `"-3d" is negative; durations here are 0 or more`},
		{"worker:\n  drain_timeout: -1d\n", "worker.drain_timeout", 2, `"-1d" is negative`},
		{"queues:\n  a:\n    dead_retention: 4000d\n", "queues.a.dead_retention", 3, "4000d is out of range 1m..87600h"},
		{"queues:\n  a:\n    dead_retention: 100000h\n", "queues.a.dead_retention", 3, "out of range 1m..87600h"},
		{"queues:\n  a_dlq: {}\n", "queues.a_dlq", 2, "reserved for dead-letter queues"},
		{"queues:\n  a:\n    handler: demo\n", "queues.a.handler", 3, "expected a mapping (key: value lines), got a plain value"},
		{"queues:\n  a:\n    handler:\n      timeout: 1s\n", "queues.a.handler.type", 3, "missing"},
		{"worker:\n  drain_timeout: 1 minute\n", "worker.drain_timeout", 2, "is not a duration"},
		{"worker:\n  drain_timeout: 0s\n", "worker.drain_timeout", 2, "out of range 1ms..24h"},
		{"worker:\n  poll_interval: 1ms\n", "worker.poll_interval", 2, "out of range 10ms..1h"},
		{"worker:\n  database_call_timeout: 500ms\n", "worker.database_call_timeout", 2, "500ms is out of range 1s..1h: it is how long a database call of the workers, tools, pages or commands may go unanswered"},
		{"worker:\n  database_call_timeout: 0s\n", "worker.database_call_timeout", 2, "0s is out of range 1s..1h"},
		{"worker:\n  database_call_timeout: 2h\n", "worker.database_call_timeout", 2, "2h is out of range 1s..1h"},
		{"worker:\n  database_call_timeout: 30\n", "worker.database_call_timeout", 2, `"30" is not a duration`},
		{"log_format: xml\n", "log_format", 1, "use auto, text or json"},
		{"queues:\n  a: {}\n  a: {}\n", "queues.a", 3, `mapping key "a" already defined`},
		// Keys on one line (flow style): the one whose value is wrong.
		{"worker: {poll_interval: 1s, drain_timeout: -5s}\n", "worker.drain_timeout", 1, `"-5s" is negative`},
		{"worker: {poll_interval: 1s, drain_timeout: 5x}\n", "worker.drain_timeout", 1, `"5x" is not a duration`},
		{"queues:\n  q1: {max_retries: 3, backoff: -1s, handler: {type: demo}}\n", "queues.q1.backoff", 2, `"-1s" is negative`},
		{"queues:\n  q1:\n    handler: {type: demo}\n  q1:\n    handler: {type: demo}\n", "queues.q1", 4, `mapping key "q1" already defined at line 2`},
		{"queues:\n  a:\n    max_retries: 3.7\n", "queues.a.max_retries", 3, `"3.7" is not a whole number`},
		{"audit_retention: -1h\n", "audit_retention", 1, `"-1h" is negative: write a duration such as 90d or 2160h, or off to keep every entry`},
		{"audit_retention: 100000h\n", "audit_retention", 1, "100000h is out of range 1m..87600h (ten years): 2160h keeps 90 days, off keeps every entry"},
		{"log_level: info\naudit_retention: 0\n", "audit_retention", 2, "0s is out of range 1m..87600h"},
		{"audit_retention: 30s\n", "audit_retention", 1, "30s is out of range 1m..87600h"},
		{"audit_retention: 90 days\n", "audit_retention", 1, `"90 days" is not a duration or off: write days or hours, such as 90d or 2160h, or off to keep every entry`},
		{"audit_retention: 90\n", "audit_retention", 1, `"90" is not a duration or off`},
		{"audit_retention: true\n", "audit_retention", 1, `"true" is not a duration or off`},
		{"audit_retention: [90d]\n", "audit_retention", 1, "expected a duration such as 2160h, or off, got a list"},
		{"audit_retention: {days: 90}\n", "audit_retention.days", 1, "expected a duration such as 2160h, or off, got a mapping"},
	}
	for _, c := range cases {
		_, err := config.Parse("p.yaml", []byte(c.text))
		var e *config.Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error %v is not a *config.Error", c.text, err)
			continue
		}
		if e.File != "p.yaml" || e.Key != c.key || e.Line != c.line || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("%q:\n got %s (key %q line %d)\nwant key %q line %d reason containing %q", c.text, e, e.Key, e.Line, c.key, c.line, c.reason)
		}
	}
}

// A tab indenting a line is named, with the file, its line and column,
// wherever it is: the decoder's own words say neither, and on the first
// line not even where.
func TestTabIndentIsNamed(t *testing.T) {
	for _, c := range []struct {
		text      string
		line, col int
	}{
		{"\tlog_level: info\n", 1, 1},
		{"queues:\n\torders: {}\n", 2, 1},
		{"queues:\n  orders:\n  \tconcurrency: 2\n", 3, 3},
		{"log_level: info\nqueues:\n  orders:\n    concurrency: 2\n\tmax_retries: 3\n", 5, 1},
	} {
		path := filepath.Join(t.TempDir(), "pgbus.yaml")
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path)
		want := fmt.Sprintf("config %s:%d:%d: a tab indents this line; YAML indents with spaces, not tabs", path, c.line, c.col)
		var e *config.Error
		if !errors.As(err, &e) || e.Line != c.line || e.Column != c.col || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v; want %q", c.text, err, want)
		}
	}
}

// A merge key brings in the values the decoder uses, and only those: a key
// the mapping sets itself wins over the merged one, whatever the merged
// one holds.
func TestMergeKeys(t *testing.T) {
	text := "queues:\n  a: &base\n    concurrency: 3\n    max_retries: 4\n  b:\n    <<: [*base, {concurrency: 1.5}]\n  c:\n    <<: {concurrency: 1.5, max_retries: 9}\n    concurrency: 6\n"
	f, err := config.Parse("merge.yaml", []byte(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if b := f.Queues["b"]; b.Concurrency != 3 {
		t.Errorf("queue b concurrency %d; want 3 from the first merged mapping", b.Concurrency)
	}
	if c := f.Queues["c"]; c.Concurrency != 6 || c.Settings.MaxRetries == nil || *c.Settings.MaxRetries != 9 {
		t.Errorf("queue c = %+v; want its own concurrency 6 and the merged max_retries 9", c)
	}
}

// audit_retention takes a duration or off, which keeps every entry; left
// out, the engine's default applies.
func TestAuditRetention(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"log_level: info\n":          0,
		"audit_retention:\n":         0,
		"audit_retention: 720h\n":    720 * time.Hour,
		"audit_retention: 87600h\n":  87600 * time.Hour,
		"audit_retention: 1m\n":      time.Minute,
		"audit_retention: off\n":     -1,
		"audit_retention: \"OFF\"\n": -1,
	} {
		f, err := config.Parse("p.yaml", []byte(text))
		if err != nil || f.EngineAuditRetention() != want {
			t.Errorf("%q: audit retention %v, %v; want %v", text, f.EngineAuditRetention(), err, want)
		}
	}
	var none *config.File
	if none.EngineAuditRetention() != 0 {
		t.Error("no file gives an audit retention")
	}
}

// stats_retention takes a duration of 24h or more, or off, which keeps
// every counter; left out, the engine's default applies. Shorter, or
// longer than ten years, is refused.
func TestStatsRetention(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"log_level: info\n":         0,
		"stats_retention:\n":        0,
		"stats_retention: 2d\n":     48 * time.Hour,
		"stats_retention: 24h\n":    24 * time.Hour,
		"stats_retention: 87600h\n": 87600 * time.Hour,
		"stats_retention: off\n":    -1,
	} {
		f, err := config.Parse("p.yaml", []byte(text))
		if err != nil || f.EngineStatsRetention() != want {
			t.Errorf("%q: stats retention %v, %v; want %v", text, f.EngineStatsRetention(), err, want)
		}
	}
	var none *config.File
	if none.EngineStatsRetention() != 0 {
		t.Error("no file gives a stats retention")
	}
	for _, text := range []string{"stats_retention: 23h\n", "stats_retention: 0\n", "stats_retention: 87601h\n"} {
		_, err := config.Parse("p.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), "stats_retention") || !strings.Contains(err.Error(), "out of range 24h..87600h") {
			t.Errorf("%q: err %v; want stats_retention refused as out of range 24h..87600h", text, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pgbus.yaml")
	if err := os.WriteFile(path, []byte("log_level: warn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil || f.LogLevel != "warn" || f.Path() != path {
		t.Fatalf("Load: %+v %v", f, err)
	}
	_, err = config.Load(filepath.Join(dir, "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml: cannot read it: no such file or directory") {
		t.Fatalf("missing file: %v", err)
	}
	// A directory names no file to read: say so, and where it came from,
	// rather than the read's "read DIR: is a directory".
	_, err = config.Load(dir)
	if err == nil || !strings.Contains(err.Error(), dir+": is a directory: give the path of the configuration file itself (check --config or PGBUS_CONFIG)") {
		t.Fatalf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", config.MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("big file: %v", err)
	}
}

func TestErrorf(t *testing.T) {
	f, err := config.Parse("p.yaml", []byte("queues:\n  orders:\n    handler:\n      type: nope\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := f.Errorf("queues.orders.handler", "unknown handler type %q", "nope").Error()
	if got != `config p.yaml:3: queues.orders.handler: unknown handler type "nope"` {
		t.Fatalf("Errorf: %s", got)
	}
	if got := f.Errorf("queues.other.handler", "x").Error(); got != "config p.yaml:1: queues.other.handler: x" {
		t.Fatalf("Errorf of a key not in the file: %s", got)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "1s": time.Second, " 1m30s ": 90 * time.Second, "250ms": 250 * time.Millisecond,
		"7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour} {
		d, err := config.ParseDuration(in)
		if err != nil || d.D() != want {
			t.Errorf("%q: %v %v", in, d, err)
		}
	}
	for _, in := range []string{"5", "-1s", "soon", "", "d", "-7d", "1.5d", "1d12h", "999999999999d"} {
		if _, err := config.ParseDuration(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

// The file's own booleans quoted, "false" or "true", mean what they say,
// as a handler's boolean options do and as the other words YAML takes for
// them (no, off, yes, on) do, quoted or not.
func TestQuotedBooleans(t *testing.T) {
	const file = `
no_embedded: %[1]s
worker: {no_listen: %[1]s}
queues:
  orders: &q
    delete_on_success: %[1]s
  emails:
    <<: *q
alerts:
  url: https://hooks.example.com/x
  enabled: %[1]s
`
	for v, want := range map[string]bool{`"false"`: false, `'False'`: false, `"FALSE"`: false, `"no"`: false, `false`: false,
		`"true"`: true, `'TRUE'`: true, `"yes"`: true, `true`: true} {
		f, err := config.Parse("pgbus.yaml", []byte(fmt.Sprintf(file, v)))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		o, _ := f.Queue("orders")
		e, _ := f.Queue("emails")
		for key, got := range map[string]*bool{"no_embedded": f.NoEmbedded, "worker.no_listen": f.Worker.NoListen,
			"queues.orders.delete_on_success": o.DeleteOnSuccess, "queues.emails.delete_on_success": e.DeleteOnSuccess, "alerts.enabled": f.Alerts.Enabled} {
			if got == nil || *got != want {
				t.Errorf("%s: %s is %v; want %v", v, key, got, want)
			}
		}
	}
	// A quoted word that is no boolean is still refused, with its line.
	_, err := config.Parse("pgbus.yaml", []byte("worker:\n  no_listen: \"maybe\"\n"))
	if err == nil || !strings.Contains(err.Error(), "pgbus.yaml:2") || !strings.Contains(err.Error(), "no_listen") {
		t.Errorf("no_listen: \"maybe\": %v; want it refused at line 2", err)
	}
	// A key the file does not know is still refused beside a quoted boolean.
	_, err = config.Parse("pgbus.yaml", []byte("no_embedded: \"true\"\nno_embeded: true\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown key "no_embeded"`) {
		t.Errorf("misspelt key beside a quoted boolean: %v; want it refused", err)
	}
}
