package handlers

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The help of headers and env, which pgbus help config shows, names every
// header and variable whose value is no secret, and the shortest value
// hidden: it is written out by hand, and must not drift from the rules.
func TestSentSecretRulesAreDocumented(t *testing.T) {
	help := func(options any, field string) string {
		f, _ := reflect.TypeOf(options).FieldByName(field)
		return f.Tag.Get("help")
	}
	headers, env := help(HTTPOptions{}, "Headers"), help(ExecOptions{}, "Env")
	for _, h := range plainHeaders {
		if !strings.Contains(headers, h) {
			t.Errorf("the help of headers does not name %s: %s", h, headers)
		}
	}
	for _, n := range append(append([]string{"LC_*"}, plainEnvNames...), plainEnvSuffixes...) {
		if !strings.Contains(env, n) {
			t.Errorf("the help of env does not name %s: %s", n, env)
		}
	}
	for what, doc := range map[string]string{"headers": headers, "env": env} {
		if !strings.Contains(doc, "shorter than "+strconv.Itoa(MinSentSecret)+" characters") {
			t.Errorf("the help of %s does not give the shortest value hidden: %s", what, doc)
		}
	}
}

// Which values are secrets: every header value but the plain headers',
// the credential after a scheme too; env values but those of plain names,
// unless the name looks like a secret's; never one shorter than
// MinSentSecret.
func TestSentSecretRules(t *testing.T) {
	for name, plain := range map[string]bool{"PATH": true, "PWD": true, "LC_ALL": true, "LEDGER_DIR": true, "db_host": true,
		"BILLING_MODE": true, "ACME_CRED_VALUE": false, "SESSION_DIR": false, "AUTH_MODE": false, "HOOK_URL": false, "DIRECTOR": false} {
		if plainEnv(name) != plain {
			t.Errorf("plainEnv(%s) = %v, want %v", name, !plain, plain)
		}
	}
	var s sentSecrets
	s.addHeader("Bearer 3f9c2a7be1")
	s.add("päda123")      // 7 characters, 8 bytes
	s.add("short77")      // 7 characters
	s.add("  pädagogik ") // 9 characters, 10 bytes, padded
	got := shownText([]byte("Bearer 3f9c2a7be1 | 3f9c2a7be1 | short77 | päda123 | pädagogik"), false, s)
	if want := "[REDACTED] | [REDACTED] | short77 | päda123 | [REDACTED]"; got != want {
		t.Errorf("hide = %q, want %q", got, want)
	}
}
