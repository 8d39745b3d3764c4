package cli_test

import (
	"strings"
	"testing"
)

// Secrets in the environment never reach a help page: every command's
// --help is printed with a token, a database password and exporter headers
// set, and none of them may show, as a flag's default or otherwise.
func TestHelpShowsNoSecretFromTheEnvironment(t *testing.T) {
	t.Parallel()
	const (
		token    = "tok-help-SECRET-0123456789abcdefghijklmnop"
		password = "pw-help-SECRET"
		header   = "hdr-help-SECRET"
	)
	env := []string{
		"PGBUS_MCP_TOKEN=" + token,
		"DATABASE_URL=postgres://app:" + password + "@127.0.0.1:1/app",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=" + header,
	}
	commands := helpCommands(t, env, nil)
	if len(commands) < 30 {
		t.Fatalf("found %d commands in the help pages; want every one (30 or more): %q", len(commands), commands)
	}
	for _, path := range commands {
		r := pgbus(t, env, append(path, "--help")...)
		if r.code != 0 {
			t.Fatalf("pgbus %s --help: exit %d\n%s", strings.Join(path, " "), r.code, r.stderr)
		}
		for _, secret := range []string{token, password, header} {
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("pgbus %s --help prints %q from the environment:\n%s", strings.Join(path, " "), secret, r.stdout)
			}
		}
		// Read here, where every page is at hand: a flag says its default
		// once, or a page says "(default 168h) (default 0s)".
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Count(line, "(default ") > 1 {
				t.Errorf("pgbus %s --help gives a flag two defaults: %s", strings.Join(path, " "), strings.TrimSpace(line))
			}
		}
	}
}

// helpCommands returns the path of every command below parent, found as a
// newcomer finds them: in the help pages' command lists.
func helpCommands(t *testing.T, env []string, parent []string) [][]string {
	t.Helper()
	r := pgbus(t, env, append(parent, "--help")...)
	var out [][]string
	in := false
	for _, line := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "Available Commands:"):
			in = true
		case in && strings.TrimSpace(line) == "":
			in = false
		case in:
			name := strings.Fields(line)[0]
			if name == "help" || name == "completion" {
				continue
			}
			path := append(append([]string{}, parent...), name)
			out = append(out, path)
			out = append(out, helpCommands(t, env, path)...)
		}
	}
	return out
}

// The token in the environment is the one the HTTP servers require: too
// short a one off loopback is refused, without the refusal quoting it.
func TestAuthTokenFromTheEnvironment(t *testing.T) {
	t.Parallel()
	const short = "short-SECRET"
	for _, args := range [][]string{
		{"serve", "--transport", "http", "--addr", "0.0.0.0:0"},
		{"dashboard", "--addr", "0.0.0.0:0"},
	} {
		r := usageRun(t, []string{"PGBUS_MCP_TOKEN=" + short, "DATABASE_URL=postgres://nobody@127.0.0.1:1/none"}, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "too few") {
			t.Errorf("pgbus %s with a %d-character PGBUS_MCP_TOKEN: exit %d, %s; want exit 2 saying it has too few characters", strings.Join(args, " "), len(short), r.code, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, short) {
			t.Errorf("pgbus %s quotes the token: %s", strings.Join(args, " "), r.stderr)
		}
	}
}
