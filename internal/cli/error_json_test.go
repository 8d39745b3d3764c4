package cli_test

import (
	"cmp"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// errorJSON is the error a command run with --json prints on stderr.
type errorJSON struct {
	Error    string     `json:"error"`
	Kind     string     `json:"kind"`
	ExitCode int        `json:"exit_code"`
	Next     []nextStep `json:"next"`
}

type nextStep struct {
	Command string `json:"command"`
	Why     string `json:"why"`
}

// A command run with --json that fails prints its error on stderr as one
// JSON object on one line: the error line's words, its kind, the exit
// code and the next steps as commands, none on stdout. Run without --json
// it prints the same words as the line it always printed, with the same
// exit code; the line names the next steps too.
func TestJSONErrors(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	unreachable := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		kind string
		code int
		next string // a command among the next steps, if any
		self string // a command the steps must not name: the one that failed
		// result: the command prints its result before its exit status
		// (ids it did not handle), which is all stdout holds.
		result bool
	}{
		{"not found", d.env, []string{"dlq", "show", "42", "--queue", "orders"}, "not_found", 3, "pgbus dlq list --queue orders", "", false},
		{"retry not found", d.env, []string{"dlq", "retry", "42", "--queue", "orders"}, "not_found", 3, "pgbus dlq list --queue orders", "", true},
		{"bad since", d.env, []string{"dlq", "list", "--since", "last tuesday"}, "invalid", 2, "", "", false},
		{"bad flag value", d.env, []string{"dlq", "list", "--limit", "abc"}, "usage", 2, "", "", false},
		{"unknown flag", d.env, []string{"dlq", "list", "--bogus"}, "usage", 2, "", "", false},
		{"mistyped subcommand", d.env, []string{"dlq", "lsit"}, "usage", 2, "", "", false},
		{"database unreachable", unreachable, []string{"queues"}, "unavailable", 1, "pgbus health", "", false},
		{"health unreachable", unreachable, []string{"health"}, "unavailable", 1, "", "pgbus health", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// --json last: after a flag that cannot be parsed, as a
			// script appends it.
			j := runBinary(t, quickBinary, c.env, "", append(slices.Clone(c.args), "--json")...)
			got := decodeErrorJSON(t, j)
			if res := keys(t, cmp.Or(j.stdout, "{}")); (len(res) > 0) != c.result || res["exit_code"] != nil {
				t.Errorf("stdout %q, want only the result, if the command has one", j.stdout)
			}
			if got.Kind != c.kind || got.ExitCode != c.code || j.code != c.code {
				t.Errorf("kind %q, exit_code %d, exit %d; want %q and %d\n%s", got.Kind, got.ExitCode, j.code, c.kind, c.code, j.stderr)
			}
			if c.next != "" && !slices.ContainsFunc(got.Next, func(n nextStep) bool { return n.Command == c.next && n.Why != "" }) {
				t.Errorf("next %+v, want %q with why it helps", got.Next, c.next)
			}
			if c.self != "" && (strings.Contains(got.Error, c.self) || slices.ContainsFunc(got.Next, func(n nextStep) bool { return n.Command == c.self })) {
				t.Errorf("the error of %s points at itself: %q, next %+v", c.self, got.Error, got.Next)
			}
			if c.next != "" && !strings.Contains(got.Error, "see "+c.next) {
				t.Errorf("the line %q does not name %q, which next lists: a person reads the line", got.Error, c.next)
			}

			text := runBinary(t, quickBinary, c.env, "", c.args...)
			if text.code != c.code || text.stderr != "pgbus: "+got.Error+"\n" {
				t.Errorf("without --json: exit %d, stderr %q; want %d and the line %q", text.code, text.stderr, c.code, "pgbus: "+got.Error)
			}
		})
	}
}

// decodeErrorJSON decodes the error r printed on stderr, which must be
// one JSON object on one line; its next steps are a list, empty when there
// are none.
func decodeErrorJSON(t *testing.T, r run) errorJSON {
	t.Helper()
	line, rest, _ := strings.Cut(r.stderr, "\n")
	if rest != "" {
		t.Fatalf("stderr has more than one line:\n%s", r.stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		t.Fatalf("stderr is not a JSON object: %v\n%s", err, r.stderr)
	}
	if next := string(raw["next"]); !strings.HasPrefix(next, "[") {
		t.Errorf("next is %s, want a list\n%s", next, line)
	}
	var e errorJSON
	decodeStrict(t, line, &e)
	if e.Error == "" || strings.HasPrefix(e.Error, "pgbus:") {
		t.Errorf("error %q, want the error line's words\n%s", e.Error, line)
	}
	return e
}

// Errors stay the text line for a command that takes no --json, and for
// one given --json=false, even when its flags cannot be parsed.
func TestJSONErrorsOnlyWithJSON(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"demo", "--json"},
		{"dlq", "list", "--limit", "abc", "--json=false"},
		{"dlq", "list", "--json", "--json=false", "--bogus"},
	} {
		r := usageRun(t, nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "pgbus: ") || strings.Contains(r.stderr, "{") {
			t.Errorf("pgbus %s: exit %d, stderr %q; want 2 and the text line", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// A command's --json given before its name is refused in JSON, naming
// where it goes: cobra took the next word for its value and answered
// that "list" is no command.
func TestJSONFlagBeforeTheCommand(t *testing.T) {
	t.Parallel()
	r := usageRun(t, nil, "--json", "dlq", "list")
	if r.code != 2 || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q: want 2 and nothing", r.code, r.stdout)
	}
	var e errorJSON
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil {
		t.Fatalf("stderr is not one JSON error: %q", r.stderr)
	}
	if e.Kind != "usage" || !strings.Contains(e.Error, "--json is a flag of pgbus dlq list: give it after the command's name (pgbus dlq list --json)") {
		t.Fatalf("error %+v does not say where --json goes", e)
	}
}

// A long-running command logging JSON (--log-format json, as a container's
// log shipper wants) ends with its error as a record of that log, not as a
// line of text among them: the one line that says why a pod crash-loops.
func TestLongRunningErrorIsAJSONRecordWithJSONLogs(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	r := pgbus(t, d.env, "work", "--log-format", "json", "--queue", "shop", "--handler", "nosuch")
	if r.code != 2 {
		t.Fatalf("work with an unknown handler: exit %d, want 2\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var rec struct {
		Level    string `json:"level"`
		Msg      string `json:"msg"`
		Err      string `json:"err"`
		Kind     string `json:"kind"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatalf("the last line of stderr is no JSON record: %v\n%s", err, r.stderr)
	}
	// Its message a phrase a log query can match, the error's words under
	// err, as every other line gives its error.
	if rec.Level != "ERROR" || rec.Msg != stopMsg || !strings.Contains(rec.Err, `unknown handler type "nosuch"`) || rec.Kind != "usage" || rec.ExitCode != 2 {
		t.Errorf("the error's record: %+v; want level ERROR, msg %q, its words as err, kind usage, exit code 2", rec, stopMsg)
	}
}

// stopMsg is the message of the record a long-running command stops on.
const stopMsg = "pgbus: stopped on an error"

// So does an error met before the log is made, when the command line or
// the environment asked for JSON logs: a flag the command does not know, a
// duration without its unit, a secret's file that is missing.
func TestStartUpErrorIsAJSONRecordWithJSONLogs(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		env  []string
		args []string
		says string
	}{
		{nil, []string{"work", "--log-format", "json", "--bogus"}, "unknown flag: --bogus"},
		{nil, []string{"work", "--log-format=json", "--poll-interval", "5"}, "--poll-interval"},
		{[]string{"PGBUS_LOG_FORMAT=json", "DATABASE_URL_FILE=" + missing}, []string{"serve"}, "DATABASE_URL_FILE"},
	} {
		r := pgbus(t, c.env, c.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		var rec struct {
			Level    string `json:"level"`
			Msg      string `json:"msg"`
			Err      string `json:"err"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil || r.code != 2 {
			t.Errorf("%v: exit %d, the last line of stderr is no JSON record (%v):\n%s", c.args, r.code, err, r.stderr)
			continue
		}
		if rec.Level != "ERROR" || rec.Msg != stopMsg || !strings.Contains(rec.Err, c.says) || rec.ExitCode != 2 {
			t.Errorf("%v: the error's record %+v; want level ERROR, msg %q, err saying %q, exit code 2", c.args, rec, stopMsg, c.says)
		}
	}
	// Text asked for on the command line wins over the environment.
	if r := pgbus(t, []string{"PGBUS_LOG_FORMAT=json"}, "work", "--log-format", "text", "--bogus"); !strings.HasPrefix(r.stderr, "pgbus: unknown flag: --bogus") {
		t.Errorf("--log-format text over PGBUS_LOG_FORMAT=json: %q; want a line of text", r.stderr)
	}
}
