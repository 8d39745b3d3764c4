//go:build unix

// The exec handler of this test runs a shell script with /bin/sh.

package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/ops"
)

// A value a handler takes from the environment (${NAME}) is a secret
// wherever it goes, a url's path or a header or variable whose value is
// otherwise no secret (User-Agent, a _MODE): said back by the downstream
// it is hidden, and the failure quotes the url as written.
func TestEnvironmentValuesAreHidden(t *testing.T) {
	const (
		hookPath = "hp-8Kd2Lx5Vq9"
		agent    = "ua-3Jf8Wn2Rt6"
		mode     = "md-6Pc1Hs4Yb7"
	)
	t.Setenv("PGBUS_TEST_HOOK_PATH", hookPath)
	t.Setenv("PGBUS_TEST_AGENT", agent)
	t.Setenv("PGBUS_TEST_MODE", mode)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, "no hook at %s for %s", r.URL.Path, r.Header.Get("User-Agent"))
	}))
	defer srv.Close()
	script := writeScript(t, t.TempDir(), "mode.sh", "printf 'bad mode %s\\n' \"$BILLING_MODE\" >&2\nexit 3\n")
	job := &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"}

	fn, _ := mustBuild(t, specFromYAML(t, "type: http\nurl: "+srv.URL+"/hooks/${PGBUS_TEST_HOOK_PATH}\n"+
		"headers: {User-Agent: \"${PGBUS_TEST_AGENT}\"}\nbreaker: {enabled: false}"))
	err := fn(context.Background(), job)
	if err == nil || !strings.Contains(err.Error(), "/hooks/${PGBUS_TEST_HOOK_PATH}: 500") {
		t.Fatalf("http error %v; want the 500 quoting the url as written", err)
	}
	texts := map[string]string{"http message": err.Error(), "http failure history": outputOf(t, err)}

	fn, _ = mustBuild(t, specFromYAML(t, "type: exec\ncommand: [/bin/sh, "+script+"]\nenv: {BILLING_MODE: \"${PGBUS_TEST_MODE}\"}\nbreaker: {enabled: false}"))
	err = fn(context.Background(), job)
	if err == nil {
		t.Fatal("the command's exit 3 was taken as success")
	}
	texts["exec message"], texts["exec failure history"] = err.Error(), outputOf(t, err)
	for what, text := range texts {
		for _, v := range []string{hookPath, agent, mode} {
			if strings.Contains(text, v) {
				t.Errorf("the %s shows %s: %s", what, v, text)
			}
		}
		if !strings.Contains(text, ops.Redacted) {
			t.Errorf("the %s has no %s: %s", what, ops.Redacted, text)
		}
	}
}

// A ${NAME} whose variable is not set fails Build, naming the variable
// and the key, and not Check, which the commands that run no handler use;
// an error about the url quotes it as written, not with the variable's
// value; $${NAME} is a literal ${NAME}.
func TestEnvironmentReferencesInOptions(t *testing.T) {
	t.Setenv("PGBUS_TEST_PORT", "99999x")
	t.Setenv("PGBUS_TEST_SET", "set-value-1")
	t.Setenv("PGBUS_TEST_URL", "ftp://svc:pw-Vb6Tn3Kc8@h.example.com/x")
	for _, c := range []struct {
		what, block string
		check, want string // "" for none
	}{
		{"unset header", "type: http\nurl: https://h.example.com/\nheaders: {X-Key: \"${PGBUS_TEST_UNSET}\"}", "",
			"headers: header X-Key uses ${PGBUS_TEST_UNSET}, but the environment variable PGBUS_TEST_UNSET is not set"},
		{"unset url", "type: http\nurl: \"${PGBUS_TEST_UNSET}\"", "", "url: uses ${PGBUS_TEST_UNSET}, but"},
		{"unset env", "type: exec\ncommand: [/bin/sh]\nenv: {TOKEN: \"${PGBUS_TEST_UNSET}\"}", "",
			"env: variable TOKEN uses ${PGBUS_TEST_UNSET}, but the environment variable PGBUS_TEST_UNSET is not set"},
		{"not a name", "type: exec\ncommand: [/bin/sh]\nenv: {TOKEN: \"${not a name}\"}", "in variable TOKEN, ${not a name} is not a variable reference",
			"in variable TOKEN, ${not a name} is not a variable reference"},
		{"unclosed", "type: http\nurl: https://h.example.com/\nheaders: {Authorization: \"Bearer ${SECRET_TOKEN\"}", "in header Authorization, ${SECRET_TOKEN has no closing }",
			"headers: in header Authorization, ${SECRET_TOKEN has no closing }: write ${SECRET_TOKEN}, or $${ for a literal ${"},
		{"whole url from a variable", "type: http\nurl: \"${PGBUS_TEST_URL}\"", `"${PGBUS_TEST_URL}": scheme`, `"${PGBUS_TEST_URL}": scheme`},
		{"bad url from a variable", "type: http\nurl: \"http://h.example.com:${PGBUS_TEST_PORT}/x\"", `":${PGBUS_TEST_PORT}`, `":${PGBUS_TEST_PORT}`},
	} {
		spec := specFromYAML(t, c.block)
		if err := handlers.Check(spec); (c.check == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.check)) {
			t.Errorf("%s: Check: %v; want %q", c.what, err, c.check)
		}
		_, _, err := handlers.Build(spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "99999x") || strings.Contains(err.Error(), "pw-Vb6Tn3Kc8") || strings.Contains(err.Error(), "h.example.com/x") {
			t.Errorf("%s: Build: %v; want %q", c.what, err, c.want)
		}
	}

	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("X-Tag") }))
	defer srv.Close()
	fn, _ := mustBuild(t, specFromYAML(t, "type: http\nurl: "+srv.URL+"\nheaders: {X-Tag: \"$${PGBUS_TEST_SET} ${PGBUS_TEST_SET}\"}"))
	if err := fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"}); err != nil {
		t.Fatal(err)
	}
	if got != "${PGBUS_TEST_SET} set-value-1" {
		t.Fatalf("X-Tag %q; want the escaped reference literal and the other expanded", got)
	}
}

// outputOf is the downstream's output err carries for the failure history.
func outputOf(t *testing.T, err error) string {
	t.Helper()
	var oe engine.OutputError
	if !errors.As(err, &oe) {
		t.Fatalf("%v carries no output", err)
	}
	return oe.FailureOutput().Text
}

// ${NAME} in an exec handler's dir is the environment variable NAME, as in
// its env: the command runs there, and errors and its output show the
// path, a place and no secret. An unset variable fails Build, naming it
// and the key, not Check.
func TestEnvironmentReferenceInDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PGBUS_TEST_WORKDIR", dir)
	fn, _ := mustBuild(t, specFromYAML(t, "type: exec\ncommand: [/bin/sh, -c, 'pwd >&2; exit 3']\ndir: \"${PGBUS_TEST_WORKDIR}\"\nbreaker: {enabled: false}"))
	err := fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"})
	var ee *handlers.ExitError
	if !errors.As(err, &ee) || ee.Output != dir {
		t.Fatalf("%v; want the command run in %s, which it prints", err, dir)
	}
	spec := specFromYAML(t, "type: exec\ncommand: [/bin/sh]\ndir: \"${PGBUS_TEST_UNSET}/work\"")
	if err := handlers.Check(spec); err != nil {
		t.Errorf("Check: %v; want no need of the variable", err)
	}
	if _, _, err := handlers.Build(spec); err == nil || !strings.Contains(err.Error(), "dir: uses ${PGBUS_TEST_UNSET}, but the environment variable PGBUS_TEST_UNSET is not set") {
		t.Errorf("Build: %v; want the unset variable named", err)
	}
	t.Setenv("PGBUS_TEST_WORKDIR", filepath.Join(dir, "gone"))
	if _, _, err := handlers.Build(specFromYAML(t, "type: exec\ncommand: [/bin/sh]\ndir: \"${PGBUS_TEST_WORKDIR}\"")); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("Build in a missing dir: %v; want it refused, naming the path", err)
	}
}
