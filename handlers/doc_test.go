package handlers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/handlers"
)

// Every key of every handler type is documented: a field without a help
// tag would show in pgbus help config with nothing to say.
func TestDocsDescribeEveryOption(t *testing.T) {
	t.Parallel()
	var check func(where string, opts []handlers.Option)
	check = func(where string, opts []handlers.Option) {
		for _, o := range opts {
			if o.Doc == "" || o.Value == "" {
				t.Errorf("%s%s: value %q, doc %q", where, o.Key, o.Value, o.Doc)
			}
			check(where+o.Key+".", o.Options)
		}
	}
	check("", handlers.CommonOptions())
	var types []string
	for _, d := range handlers.Docs() {
		types = append(types, d.Type)
		if d.Summary == "" || len(d.Options) == 0 {
			t.Errorf("type %s: summary %q, %d options", d.Type, d.Summary, len(d.Options))
		}
		check(d.Type+": ", d.Options)
	}
	if !slices.Equal(types, handlers.Types()) {
		t.Errorf("Docs covers %v, Types is %v", types, handlers.Types())
	}
	http := handlers.Docs()[slices.Index(types, handlers.TypeHTTP)]
	i := slices.IndexFunc(http.Options, func(o handlers.Option) bool { return o.Key == "on_status" })
	if i < 0 || len(http.Options[i].Options) == 0 || http.Options[i].Options[0].Key != "action" {
		t.Errorf("http on_status is not documented with the keys of a rule: %+v", http.Options)
	}
}

// The exec handler's help says what a timeout and a worker's stop send
// the command's process group: SIGKILL, with no SIGTERM first, which a
// command that cleans up on SIGTERM must know.
func TestExecDocsNameTheSignal(t *testing.T) {
	t.Parallel()
	for _, d := range handlers.Docs() {
		if d.Type != handlers.TypeExec {
			continue
		}
		if !strings.Contains(d.Summary, "SIGKILL") || !strings.Contains(d.Summary, "no SIGTERM") || !strings.Contains(d.Summary, "drain timeout") {
			t.Errorf("the exec summary does not say that its timeout and a worker's drain timeout send SIGKILL, with no SIGTERM first: %s", d.Summary)
		}
	}
	for _, o := range handlers.CommonOptions() {
		if o.Key == "timeout" && !strings.Contains(o.Doc, "SIGKILL") {
			t.Errorf("the timeout's help does not say what it sends an exec command: %s", o.Doc)
		}
	}
}
