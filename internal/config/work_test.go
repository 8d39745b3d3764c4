package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
)

const workFile = `
queues:
  orders:
    concurrency: 4
    handler: {type: demo}
    max_retries: 7
  emails:
    handler: {type: demo}
  bare: {}
`

func parseWork(t *testing.T) *config.File {
	t.Helper()
	f, err := config.Parse("pgbus.yaml", []byte(workFile))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Without specs the file's queues are worked with their own concurrency
// and handler; a queue with no handler stops the plan, naming it.
func TestWorkQueuesFromFile(t *testing.T) {
	f := parseWork(t)
	_, err := f.WorkQueues(config.WorkPlan{})
	if err == nil || !strings.Contains(err.Error(), "queue bare has no handler") {
		t.Fatalf("plan of a file with a handlerless queue: %v", err)
	}
	qs, err := f.WorkQueues(config.WorkPlan{Handler: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]config.WorkQueue{}
	for _, q := range qs {
		got[q.Name] = q
	}
	if len(got) != 3 || got["orders"].Concurrency != 4 || got["emails"].Concurrency != config.DefaultConcurrency || !got["bare"].Declared {
		t.Fatalf("plan %+v", qs)
	}
	if mr := got["orders"].Settings.MaxRetries; mr == nil || *mr != 7 {
		t.Fatalf("orders keeps the file's settings, got %+v", got["orders"].Settings)
	}
}

// Specs win over the file: NAME:N over the plan's concurrency over the
// file's, and a queue the file does not declare is not created.
func TestWorkQueuesFromSpecs(t *testing.T) {
	f := parseWork(t)
	qs, err := f.WorkQueues(config.WorkPlan{Specs: []string{"orders", " emails:3", "other"}, Source: "--queue", Handler: "demo", Concurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		conc     int
		declared bool
	}{{"orders", 6, true}, {"emails", 3, true}, {"other", 6, false}}
	for i, w := range want {
		if q := qs[i]; q.Name != w.name || q.Concurrency != w.conc || q.Declared != w.declared || q.Handler.Type != "demo" {
			t.Errorf("queue %d: %+v, want %+v", i, q, w)
		}
	}
}

// Every mistake names where it came from.
func TestWorkQueuesErrors(t *testing.T) {
	f := parseWork(t)
	for _, c := range []struct {
		plan config.WorkPlan
		want string
	}{
		{config.WorkPlan{Specs: []string{"a", "a"}, Source: "--queue", Handler: "demo"}, `--queue names queue "a" twice`},
		{config.WorkPlan{Specs: []string{"a:0"}, Source: "environment variable PGBUS_QUEUES", Handler: "demo"}, `environment variable PGBUS_QUEUES "a:0": concurrency must be`},
		{config.WorkPlan{Specs: []string{"Bad"}, Source: "--queue", Handler: "demo"}, `--queue "Bad"`},
		{config.WorkPlan{Specs: []string{"a"}, Source: "--queue", Handler: "nope", HandlerFrom: " (from environment variable PGBUS_HANDLER)"}, `handler "nope" (from environment variable PGBUS_HANDLER)`},
		{config.WorkPlan{Specs: []string{"a"}, Source: "--queue"}, `the configuration file pgbus.yaml configures no queue "a" (it configures: bare, emails, orders), so queue a has no handler`},
		{config.WorkPlan{Specs: []string{"bare"}, Source: "--queue"}, "queue bare has no handler in the configuration file pgbus.yaml: give it one there"},
	} {
		if _, err := f.WorkQueues(c.plan); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("plan %+v: error %v, want it to contain %q", c.plan, err, c.want)
		}
	}
}

// A handler of the file that cannot be built is caught at start, with the
// file and key.
func TestCheckHandlers(t *testing.T) {
	f, err := config.Parse("pgbus.yaml", []byte("queues:\n  orders:\n    handler: {type: nope}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CheckHandlers(); err == nil || !strings.Contains(err.Error(), "queues.orders.handler") {
		t.Fatalf("CheckHandlers: %v", err)
	}
	if err := parseWork(t).CheckHandlers(); err != nil {
		t.Fatalf("CheckHandlers of good handlers: %v", err)
	}
}

// A program this machine lacks fails only the worker that would run it:
// every command checks the file, but only a worker needs the program.
func TestCheckHandlersLeavesProgramsToWorkers(t *testing.T) {
	f, err := config.Parse("pgbus.yaml", []byte("queues:\n  exc:\n    handler: {type: exec, command: [/nonexistent/pgbus-test.sh]}\n  orders:\n    handler: {type: demo}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CheckHandlers(); err != nil {
		t.Fatalf("CheckHandlers looked for the program: %v", err)
	}
	if _, err := f.WorkQueues(config.WorkPlan{}); err == nil || !strings.Contains(err.Error(), "queues.exc.handler") || !strings.Contains(err.Error(), "does not exist: install it") {
		t.Fatalf("WorkQueues of the file's queues: %v", err)
	}
	if qs, err := f.WorkQueues(config.WorkPlan{Specs: []string{"orders"}, Source: "--queue"}); err != nil || len(qs) != 1 {
		t.Fatalf("WorkQueues of orders alone: %v %v", qs, err)
	}
	bad, err := config.Parse("pgbus.yaml", []byte("queues:\n  exc:\n    handler: {type: exec, command: [/nonexistent/pgbus-test.sh], retry_exit_codes: [0]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.CheckHandlers(); err == nil || !strings.Contains(err.Error(), "queues.exc.handler") || !strings.Contains(err.Error(), "0 is success") {
		t.Fatalf("CheckHandlers of a malformed block with a missing program: %v", err)
	}
}

// A handler type from the command line or PGBUS_HANDLER never replaces a
// handler the file configures (a leftover PGBUS_HANDLER=demo would archive
// real jobs unrun): another type is refused, naming the queue and where
// the type came from; the same type is the file's, with its options.
func TestWorkHandlerDoesNotReplaceTheFiles(t *testing.T) {
	f, err := config.Parse("pgbus.yaml", []byte(`
queues:
  hooks:
    handler: {type: http, url: "https://example.com/hook", timeout: 5s}
  bare: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []config.WorkPlan{
		{Handler: "demo", HandlerFrom: " (from environment variable PGBUS_HANDLER)"},
		{Specs: []string{"hooks"}, Source: "--queue", Handler: "demo", HandlerFrom: " (from environment variable PGBUS_HANDLER)"},
	} {
		_, err := f.WorkQueues(p)
		if err == nil || !strings.Contains(err.Error(), "queue hooks has an http handler in the configuration file, and --handler demo (from environment variable PGBUS_HANDLER) would replace it") {
			t.Errorf("plan %+v: %v; want a refusal naming hooks and PGBUS_HANDLER", p, err)
		}
	}
	qs, err := f.WorkQueues(config.WorkPlan{Specs: []string{"hooks", "bare"}, Source: "--queue", Handler: "http"})
	if err == nil || !strings.Contains(err.Error(), "bare") {
		t.Fatalf("--handler http for hooks and a bare queue: %v; want bare refused for want of a url", err)
	}
	qs, err = f.WorkQueues(config.WorkPlan{Specs: []string{"hooks"}, Source: "--queue", Handler: "http"})
	if err != nil || len(qs) != 1 || qs[0].Handler.Type != "http" || len(qs[0].Handler.Options) == 0 {
		t.Fatalf("--handler http for hooks: %+v, %v; want the file's http handler with its url", qs, err)
	}
}

// A handler the file configures is named with the article its type reads
// with: an exec handler, an http handler, a demo handler.
func TestReplacedHandlerArticle(t *testing.T) {
	for typ, want := range map[string]string{"exec": "has an exec handler", "http": "has an http handler", "demo": "has a demo handler"} {
		f := &config.File{Queues: map[string]config.Queue{"reports": {Handler: &handlers.Spec{Type: typ}}}}
		other := "demo"
		if typ == "demo" {
			other = "exec"
		}
		_, err := f.WorkQueues(config.WorkPlan{Specs: []string{"reports"}, Source: "--queue", Handler: other})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--handler %s over the file's %s handler: %v; want it to say %q", other, typ, err, want)
		}
	}
}

// A problem with one option of a handler block is reported at the line of
// that option's own key, with its whole key path; a header's or a
// variable's is named in the reason, where its name would otherwise make
// the reason read as its value (and be redacted as one).
func TestHandlerOptionErrorsNameTheirKeyAndLine(t *testing.T) {
	const exec = "queues:\n  v1:\n    handler:\n      type: exec\n      command: [/bin/true]\n"
	const http = "queues:\n  v1:\n    handler:\n      type: http\n      url: http://127.0.0.1:1/\n"
	for _, c := range []struct{ name, file, want string }{
		{"a typo of a rule's key", exec + "      on_exit:\n        3:\n          action: retry\n          backof: 1s\n",
			"config v.yaml:9: queues.v1.handler.on_exit.3.backof: unknown option"},
		{"a typo of a rule's key, in flow style", exec + "      on_exit: {3: {action: retry, backof: 1s}}\n",
			"config v.yaml:6: queues.v1.handler.on_exit.3.backof: unknown option"},
		{"a typo of timeout", exec + "      timout: 5s\n",
			"config v.yaml:6: queues.v1.handler.timout: unknown option"},
		{"a value of the wrong type", exec + "      discard_exit_codes: [3]\n      retry_exit_codes: 75\n",
			"config v.yaml:7: queues.v1.handler.retry_exit_codes: expected a list"},
		{"a typo in the breaker", exec + "      breaker:\n        failure_treshold: 3\n",
			"config v.yaml:7: queues.v1.handler.breaker.failure_treshold: unknown option"},
		{"a value out of range in the breaker", exec + "      breaker:\n        failure_threshold: 0\n",
			"config v.yaml:7: queues.v1.handler.breaker.failure_threshold: 0 is out of range"},
		{"an unknown type", "queues:\n  v1:\n    handler:\n      type: smtp\n",
			`config v.yaml:4: queues.v1.handler.type: unknown handler type "smtp"`},
		{"a list as a header's value", http + "      headers:\n        Accept: text/plain\n        X-Two: [b]\n",
			"config v.yaml:8: queues.v1.handler.headers: in header X-Two, expected text, got a list"},
		{"a list as a header's value, in flow style", http + "      headers: {X-Two: [b]}\n",
			"config v.yaml:6: queues.v1.handler.headers: in header X-Two, expected text, got a list"},
		{"a broken reference in a header", http + "      headers:\n        Accept: text/plain\n        Authorization: \"Bearer ${MY-TOKEN}\"\n",
			"config v.yaml:8: queues.v1.handler.headers: in header Authorization, "},
		{"a list as a variable's value", exec + "      env:\n        MODE: [a]\n",
			"config v.yaml:7: queues.v1.handler.env: in variable MODE, expected text, got a list"},
		{"a program given by a relative path", "queues:\n  v1:\n    handler:\n      type: exec\n      timeout: 5s\n      command: [bin/charge]\n",
			`config v.yaml:6: queues.v1.handler.command: program "bin/charge" is a relative path`},
	} {
		f, err := config.Parse("v.yaml", []byte(c.file))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if err := f.CheckHandlers(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: CheckHandlers: %v\nwant it to start with %q", c.name, err, c.want)
		}
		if _, err := f.WorkQueues(config.WorkPlan{}); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: WorkQueues: %v\nwant it to start with %q", c.name, err, c.want)
		}
	}
}

// Handlers that name one circuit breaker with different settings (two http
// handlers of one host:port, whose breaker is named after it) are refused
// when the work is planned, at the line of the second one's breaker,
// naming both queues, the line of the first, and what to do; in the same
// words whatever the order of the maps the handlers come from.
func TestOneBreakerTwoSettingsNamesTheQueuesAndLines(t *testing.T) {
	f, err := config.Parse("v.yaml", []byte(`queues:
  zeta:
    handler:
      type: http
      url: http://127.0.0.1:56200/b
  alpha:
    handler:
      type: http
      url: http://127.0.0.1:56200/a
      breaker: {failure_threshold: 3}
  other:
    handler: {type: http, url: "http://127.0.0.1:56201/a", breaker: {failure_threshold: 4}}
`))
	if err != nil {
		t.Fatal(err)
	}
	const want = `config v.yaml:3: queues.zeta.handler.breaker: circuit breaker "http:127.0.0.1:56200" is configured twice with different settings: failure_threshold 3, cool_off 10s, max_cool_off 5m for queue alpha (line 10), failure_threshold 5, cool_off 10s, max_cool_off 5m for queue zeta; `
	var first string
	for i := range 20 {
		_, err := f.WorkQueues(config.WorkPlan{})
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "give their breakers the same settings, or one a name of its own") {
			t.Fatalf("WorkQueues: %v\nwant it to start with %q and say what to do", err, want)
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("the refusal changed from one plan to the next:\n%s\n%s", first, err)
		}
	}
	// Named apart, or given the same settings, they are fine.
	for _, fix := range []string{"breaker: {failure_threshold: 3, name: alpha}", "breaker: {failure_threshold: 5}"} {
		g, err := config.Parse("v.yaml", []byte("queues:\n  zeta:\n    handler: {type: http, url: http://127.0.0.1:56200/b}\n  alpha:\n    handler: {type: http, url: http://127.0.0.1:56200/a, "+fix+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.WorkQueues(config.WorkPlan{}); err != nil {
			t.Errorf("with %s: %v", fix, err)
		}
	}
}
