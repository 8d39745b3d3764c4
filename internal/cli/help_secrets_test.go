package cli_test

import (
	"slices"
	"strings"
	"sync"
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
	for _, r := range helpPages(t, env) {
		path := r.path
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

// helpPage is one command's help page: its path below pgbus (nil for
// pgbus itself) and the run of pgbus PATH --help.
type helpPage struct {
	path []string
	run
}

func (p helpPage) name() string { return strings.Join(p.path, " ") }

// helpPages returns the help page of pgbus and of every command below it,
// found as a newcomer finds them: in the help pages' command lists. Each
// page is printed once, with env.
func helpPages(t *testing.T, env []string) []helpPage {
	t.Helper()
	var pages []helpPage
	var walk func(path []string)
	walk = func(path []string) {
		page := helpPage{path: path, run: pgbus(t, env, append(slices.Clip(path), "--help")...)}
		pages = append(pages, page)
		for _, name := range commandList(page.stdout) {
			walk(append(slices.Clip(path), name))
		}
	}
	walk(nil)
	if len(pages) < 31 {
		t.Fatalf("found %d help pages; want pgbus's and every command's (31 or more)", len(pages))
	}
	return pages
}

// commandList returns the names a help page lists under Available
// Commands, but help and completion.
func commandList(help string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "Available Commands:"):
			in = true
		case in && strings.TrimSpace(line) == "":
			in = false
		case in:
			if name := strings.Fields(line)[0]; name != "help" && name != "completion" {
				out = append(out, name)
			}
		}
	}
	return out
}

// defaultHelp holds the help pages printed with no environment, which
// several tests read: the walk runs pgbus once for each command.
var defaultHelp struct {
	once  sync.Once
	pages []helpPage
	err   string
}

// defaultHelpPages returns helpPages(t, nil), walked once for every test.
func defaultHelpPages(t *testing.T) []helpPage {
	t.Helper()
	defaultHelp.once.Do(func() {
		// A failure inside the walk ends only the test that ran it; the
		// others read why from err.
		defer func() {
			if defaultHelp.pages == nil {
				defaultHelp.err = "the walk of the help pages failed in another test"
			}
		}()
		defaultHelp.pages = helpPages(t, nil)
	})
	if defaultHelp.pages == nil {
		t.Fatal(defaultHelp.err)
	}
	return defaultHelp.pages
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
