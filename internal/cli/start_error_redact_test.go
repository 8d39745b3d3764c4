package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Start-up errors quote the settings they could not use: the line pgbus
// prints hides the passwords in them, the rest of it kept.
func TestStartErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  orders:\n    handler:\n      type: http\n      url: \"http://u:CfgPW20@h:badport/x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		env    []string
		args   []string
		secret string
		want   string
	}{
		"key=value DSN, password = with spaces": {[]string{"DATABASE_URL=host=127.0.0.1 port=bad user=postgres password = HunterPW9x"}, []string{"queues"},
			"HunterPW9x", "password = [REDACTED]"},
		"URL with an @ in its password": {[]string{"DATABASE_URL=postgres://u:Pa@ssW0rd1@h:bad/db"}, []string{"queues"},
			"ssW0rd1", "postgres://u:[REDACTED]@h:bad/db"},
		"URL with an @ in its password, parsed": {[]string{"DATABASE_URL=postgres://u:Pa@ssW0rd1@127.0.0.1:1/db"}, []string{"queues"},
			"ssW0rd1", "percent-encode an @ in the password as %40"},
		"handler URL in the configuration file": {[]string{"DATABASE_URL=postgres://x@127.0.0.1:1/x"}, []string{"--config", cfg, "work"},
			"CfgPW20", `"http://u:[REDACTED]@h:badport/x" is not a URL`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := pgbusIn(t, c.env, "", c.args...)
			if r.code == 0 || !strings.HasPrefix(r.stderr, "pgbus: ") || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant a failure saying %s", r.code, r.stderr, c.want)
			}
			if strings.Contains(r.stderr, c.secret) {
				t.Errorf("stderr shows %s:\n%s", c.secret, r.stderr)
			}
		})
	}
}

// The errors of a bad database URL, configuration file or flag quote no
// secret, whatever redaction of free text would miss: the values of a
// URL's query, a webhook's token in its path, the value a command gives
// to --token, a header given without its =. Each still names the setting
// and what is wrong, and stops pgbus with a usage error or before it
// connects.
func TestStartErrorsHideQueriesArgumentsAndHeaders(t *testing.T) {
	t.Parallel()
	config := func(text string) string { return writeFile(t, "pgbus.yaml", text) }
	unreachable := "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for name, c := range map[string]struct {
		env    []string
		args   []string
		secret string
		want   string
	}{
		"DATABASE_URL with a signed query": {[]string{"DATABASE_URL=postgres://app@db.internal:bad/app?sig=Zq8SigQ1abcdef"}, []string{"queues"},
			"Zq8SigQ1abcdef", "parse database URL: cannot parse `postgres://app@db.internal:bad/app?[REDACTED]`: invalid port"},
		"--database-url with a token in options": {nil, []string{"queues", "--database-url", "postgres://app@db.internal/app?options=-c%20app.key%3DZq8KeyQ1abc&sslmode=bogus"},
			"Zq8KeyQ1abc", "sslmode is invalid"},
		"database_url in the file": {nil, []string{"--config", config("database_url: postgres://app@db.internal/app?options=-c%20app.key%3DZq8AppQ1abc&pool_max_conns=many\n"), "queues"},
			"Zq8AppQ1abc", "cannot parse pool_max_conns"},
		"handler url with a signed query": {[]string{unreachable}, []string{"--config", config("queues:\n  orders:\n    handler: {type: http, url: \"https://billing.internal:99999/charge?sig=Zq8SigQ1abcdef\"}\n"), "work"},
			"Zq8SigQ1abcdef", `queues.orders.handler.url: "https://billing.internal:99999/charge?[REDACTED]": port 99999 is out of range`},
		"webhook url of a handler": {[]string{unreachable}, []string{"--config", config("queues:\n  orders:\n    handler: {type: http, url: \"https://hooks.example.com:0/services/T0123ABCD/Xk9pQ2rT7vLm3nB8wZ4yC6dF\"}\n"), "work"},
			"Xk9pQ2rT7vLm3nB8wZ4yC6dF", `url: "https://hooks.example.com:0/services/T0123ABCD/[REDACTED]": port 0 is out of range`},
		"exec command as a string": {[]string{unreachable}, []string{"--config", config("queues:\n  orders:\n    handler: {type: exec, command: \"/usr/local/bin/charge --token Zq8TokQ1ab\"}\n"), "work"},
			"Zq8TokQ1ab", `queues.orders.handler.command: is a string; give the program and its arguments as a list, such as ["/usr/local/bin/charge", "--token", "[REDACTED]"]`},
		"alerts headers as a plain value": {[]string{unreachable}, []string{"--config", config("alerts:\n  url: https://h/x\n  headers: Zq8HdrQ1ab\n"), "work"},
			"Zq8", "alerts.headers: expected a mapping (key: value lines), got a plain value"},
		"send --header without =": {[]string{unreachable}, []string{"send", "orders", "{}", "--header", "X-Signature Zq8SigQ1abcdef"},
			"Zq8SigQ1abcdef", "--header number 1 is not key=value: write each as key=value"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := usageRun(t, c.env, c.args...)
			if r.code == 0 || !strings.HasPrefix(r.stderr, "pgbus: ") || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant a failure saying %s", r.code, r.stderr, c.want)
			}
			if strings.Contains(r.stderr, c.secret) {
				t.Errorf("stderr shows %s:\n%s", c.secret, r.stderr)
			}
		})
	}
}

// A database URL whose parameter cannot be used is a usage error that
// names the parameter with its value, and has no next step: the health
// check it named would read the same URL, and fail the same way. An
// sslrootcert that names no file was taken for a server that does not
// answer, whose next step is the health check.
func TestBadDatabaseURLParameterHasNoNextStep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, says string }{
		{"postgres://app@db.internal/app?sslmode=verify-full&sslrootcert=/nonexistent/root.crt", "fix the parameter sslrootcert=/nonexistent/root.crt"},
		{"postgres://app@db.internal/app?sslmode=disable&pool_max_conns=abc", "fix the parameter pool_max_conns=abc"},
		{"mysql://app@db.internal/app", "its scheme is mysql://"},
	} {
		r := usageRun(t, nil, "queues", "--json", "--database-url", c.url)
		e := decodeErrorJSON(t, r)
		if r.code != 2 || e.Kind != "usage" || len(e.Next) != 0 || !strings.Contains(e.Error, c.says) || strings.Contains(e.Error, "USER:PASSWORD@HOST") {
			t.Errorf("--database-url %s: exit %d, %+v\nwant a usage error saying %q, without the advice on passwords, and no next step", c.url, r.code, e, c.says)
		}
	}
}
