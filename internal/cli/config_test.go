package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pgbus work with a configuration file creates the declared queues, stores
// their retry settings, and runs their handlers.
func TestWorkFromConfigFile(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := writeFile(t, "pgbus.yaml", `
log_level: warn
worker:
  poll_interval: 50ms
  drain_timeout: 5s
queues:
  billing:
    concurrency: 4
    handler:
      type: demo
      timeout: 500ms
      latency: 1ms
    max_retries: 2
    backoff: 20ms
    backoff_max: 100ms
    jitter: 0
    visibility_timeout: 3s
    archive_retention: 48h
    dead_retention: 2160h
`)
	// The queue does not exist yet: work creates it. Nothing to do, so
	// --until-idle returns at once.
	d.ok(t, "work", "--config", cfg, "--until-idle")
	s := d.stats(t, "billing").Settings
	if s.MaxRetries != 2 || s.RetryBackoffSeconds != 0.02 || s.RetryBackoffMaxSeconds != 0.1 || s.RetryBackoffJitter != 0 || s.VisibilityTimeoutSeconds != 3 ||
		s.ArchiveRetentionSeconds != 2*86400 || s.DeadRetentionSeconds != 90*86400 {
		t.Fatalf("settings from the file: %+v", s)
	}
	if created := d.audit(t, "--tool", "queue_create"); len(created) != 1 || created[0].Client != "cli" || created[0].IsError ||
		!strings.Contains(string(created[0].Arguments), `"billing"`) {
		t.Fatalf("the queue work created is not in the audit log: %+v", created)
	}
	d.ok(t, "send", "billing", `{"simulate": "flaky", "failures": 1}`)
	d.ok(t, "send", "billing", `{"email": "nobody"}`)
	env := append([]string{"PGBUS_CONFIG=" + cfg}, d.env...)
	r := pgbus(t, env, "work", "--until-idle")
	if r.code != 0 {
		t.Fatalf("work with PGBUS_CONFIG: %d %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, `"level":"INFO"`) {
		t.Errorf("log_level warn from the file was not applied: %s", r.stderr)
	}
	if st := d.stats(t, "billing"); st.Archived != 1 || st.DLQDepth != 1 || st.LastHour.Retried < 1 {
		t.Fatalf("after work: %+v", st)
	}
	// The flag beats the environment, which beats the file.
	r = pgbus(t, append([]string{"PGBUS_LOG_LEVEL=info"}, env...), "work", "--until-idle")
	if !strings.Contains(r.stderr, `"level":"INFO"`) {
		t.Errorf("PGBUS_LOG_LEVEL=info did not beat the file's warn: %s", r.stderr)
	}
	r = pgbus(t, append([]string{"PGBUS_LOG_LEVEL=info"}, env...), "work", "--until-idle", "--log-level", "error")
	if strings.Contains(r.stderr, `"level":"INFO"`) || r.code != 0 {
		t.Errorf("--log-level error did not beat PGBUS_LOG_LEVEL: %s", r.stderr)
	}
	// queue create takes the file's settings under its own flags.
	cfg2 := writeFile(t, "create.yaml", "queues:\n  ledger:\n    max_retries: 9\n    backoff: 1s\n")
	d.ok(t, "queue", "create", "ledger", "--config", cfg2, "--backoff", "2s")
	if s := d.stats(t, "ledger").Settings; s.MaxRetries != 9 || s.RetryBackoffSeconds != 2 {
		t.Fatalf("ledger settings: %+v", s)
	}
	// Queues from the environment, with the handler from the environment.
	d.ok(t, "send", "ledger", `{"simulate": "ok"}`)
	r = pgbus(t, append([]string{"PGBUS_QUEUES=ledger:2", "PGBUS_HANDLER=demo"}, d.env...), "work", "--until-idle")
	if r.code != 0 {
		t.Fatalf("work from the environment: %d %s", r.code, r.stderr)
	}
	if st := d.stats(t, "ledger"); st.Archived != 1 {
		t.Fatalf("ledger: %+v", st)
	}
	// A queue named only on the command line must exist.
	d.fails(t, 3, "work", "--queue", "nosuch", "--handler", "demo", "--until-idle")
}

// The database URL is settled as flag > DATABASE_URL > config file.
func TestSettingsPrecedence(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	bad := "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"
	good := writeFile(t, "good.yaml", "database_url: "+d.url+"\n")
	r := pgbus(t, nil, "migrate", "--config", good)
	if r.code != 0 {
		t.Fatalf("config database_url: %d %s", r.code, r.stderr)
	}
	r = pgbus(t, []string{"DATABASE_URL=" + bad}, "migrate", "--config", good)
	if r.code != 1 {
		t.Fatalf("DATABASE_URL did not beat the file: %d %s", r.code, r.stderr)
	}
	r = pgbus(t, []string{"DATABASE_URL=" + bad, "PGBUS_CONFIG=" + good}, "migrate", "--database-url", d.url)
	if r.code != 0 {
		t.Fatalf("--database-url did not beat DATABASE_URL: %d %s", r.code, r.stderr)
	}
	r = pgbus(t, []string{"PGBUS_LOG_LEVEL=loud"}, "migrate")
	if r.code != 2 || !strings.Contains(r.stderr, "PGBUS_LOG_LEVEL") {
		t.Fatalf("bad env value: %d %q", r.code, r.stderr)
	}
	r = pgbus(t, append([]string{"PGBUS_POLL_INTERVAL=soon"}, d.env...), "work", "--queue", "x", "--handler", "demo")
	if r.code != 2 || !strings.Contains(r.stderr, "PGBUS_POLL_INTERVAL") {
		t.Fatalf("bad env duration: %d %q", r.code, r.stderr)
	}
}

// A bad configuration file stops any command at start, naming the file,
// line, key and reason, with exit code 2.
func TestBadConfigFile(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, text, says string }{
		{"unknown top-level key", "databse_url: x\n", `:1: databse_url: unknown key "databse_url"; known keys here: database_url`},
		{"unknown queue key", "queues:\n  orders:\n    max_retry: 3\n", `:3: queues.orders.max_retry: unknown key "max_retry"`},
		{"unknown handler type", "queues:\n  orders:\n    handler: {type: carrier_pigeon}\n", `:3: queues.orders.handler.type: unknown handler type "carrier_pigeon"; use one of: `},
		{"missing handler type", "queues:\n  orders:\n    handler: {timeout: 1s}\n", `queues.orders.handler.type: missing`},
		{"unknown handler option", "queues:\n  orders:\n    handler: {type: demo, url: x}\n", `:3: queues.orders.handler.url: unknown option; the options here are latency`},
		{"negative concurrency", "queues:\n  orders:\n    concurrency: -3\n", `:3: queues.orders.concurrency: -3 is out of range`},
		{"negative max_retries", "queues:\n  orders:\n    max_retries: -1\n", `:3: queues.orders.max_retries: -1 is out of range`},
		{"zero max_retries", "queues:\n  orders:\n    max_retries: 0\n", `:3: queues.orders.max_retries: 0 is out of range 1..1000`},
		{"negative duration", "queues:\n  orders:\n    backoff: -5s\n", `:3: queues.orders.backoff: "-5s" is negative`},
		{"duration without unit", "worker:\n  poll_interval: 5\n", `:2: worker.poll_interval: "5" is not a duration`},
		{"wrong type", "queues:\n  orders:\n    concurrency: ten\n", `:3: queues.orders.concurrency: "ten" is not a whole number`},
		{"bad queue name", "queues:\n  Orders:\n    concurrency: 1\n", `queues.Orders: queue name "Orders" must start with a lowercase letter`},
		{"bad strategy", "queues:\n  orders:\n    strategy: random\n", `queues.orders.strategy: "random" is not a backoff strategy`},
		{"jitter too big", "queues:\n  orders:\n    jitter: 2\n", `queues.orders.jitter: 2 is out of range 0..1`},
		{"bad log level", "log_level: loud\n", `:1: log_level: "loud": use debug, info, warn or error`},
		{"not YAML", "queues: [unclosed\n", `config `},
		{"two documents", "log_level: info\n---\nlog_level: debug\n", "more than one YAML document"},
		{"queues as a list", "queues:\n  - orders\n", `:2: queues: `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, "pgbus.yaml", c.text)
			r := pgbus(t, nil, "migrate", "--config", path)
			if r.code != 2 || r.stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, "pgbus: config "+path) || !strings.Contains(r.stderr, c.says) {
				t.Fatalf("stderr %q\nwant it to start with the file and say %q", r.stderr, c.says)
			}
		})
	}
	r := pgbus(t, nil, "migrate", "--config", "/nonexistent/pgbus.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Fatalf("missing config file: %d %q", r.code, r.stderr)
	}
	r = pgbus(t, []string{"PGBUS_CONFIG=/nonexistent/pgbus.yaml"}, "queues")
	if r.code != 2 || !strings.Contains(r.stderr, "/nonexistent/pgbus.yaml") {
		t.Fatalf("missing PGBUS_CONFIG file: %d %q", r.code, r.stderr)
	}
}

// An environment variable whose value its setting cannot read stops pgbus
// with a usage error naming the variable, the value and what it should
// look like, not the Go parser's words.
func TestBadEnvironmentValueSaysWhatItTakes(t *testing.T) {
	t.Parallel()
	unreachable := "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	cases := []struct {
		env  string
		args []string
		says string
	}{
		{"PGBUS_NO_LISTEN=maybe", []string{"work", "--queue", "x", "--handler", "demo"}, `environment variable PGBUS_NO_LISTEN="maybe": not a boolean: give 1, true, 0 or false`},
		{"PGBUS_POLL_INTERVAL=soon", []string{"work", "--queue", "x", "--handler", "demo"}, `environment variable PGBUS_POLL_INTERVAL="soon": not a duration: give a number with a unit, such as 500ms`},
		{"PGBUS_DRAIN_TIMEOUT=30", []string{"work", "--queue", "x", "--handler", "demo"}, `environment variable PGBUS_DRAIN_TIMEOUT="30": not a duration`},
		{"PGBUS_CONCURRENCY=lots", []string{"work", "--queue", "x", "--handler", "demo"}, `environment variable PGBUS_CONCURRENCY="lots": not a whole number`},
		{"PGBUS_CONCURRENCY=99999999999999999999", []string{"work", "--queue", "x", "--handler", "demo"}, `PGBUS_CONCURRENCY="99999999999999999999": out of range`},
		{"PGBUS_MCP_MAX_SESSIONS=many", []string{"serve", "--transport", "http"}, `environment variable PGBUS_MCP_MAX_SESSIONS="many": not a whole number`},
	}
	for _, c := range cases {
		r := usageRun(t, []string{unreachable, c.env}, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.says) || strings.Contains(r.stderr, "strconv") || strings.Contains(r.stderr, "time: ") {
			t.Errorf("%s pgbus %s: exit %d, stderr %q; want 2 and %q", c.env, strings.Join(c.args, " "), r.code, r.stderr, c.says)
		}
	}
}
