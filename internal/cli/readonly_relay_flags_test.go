package cli_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/vocab"
)

// The commands a server relays to an operator carry the configuration
// file it runs with, as an absolute path: the operator runs them in
// another directory, and without it a command would run against another
// database (here the embedded default) or without the file's handlers.
func TestServeRelaysItsConfigFile(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	deadShop(t, d)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("database_url: "+d.url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, _, stderr := serveStdioEnv(t, "cli-test", []string{"DATABASE_URL=" + d.url}, "--read-only", "--no-workers", "--config", rel)
	before := d.snapshot(t)

	res := callToolRaw(t, c, "pgbus_dlq_retry", map[string]any{"queue": "shop", "limit": 2})
	_, command, ok := strings.Cut(toolText(res), "an operator can run: ")
	if !res.IsError || !ok {
		t.Fatalf("pgbus_dlq_retry on a read-only server: %q; want a refusal naming the command\nserve's stderr: %s", toolText(res), stderr.String())
	}
	if want := "pgbus dlq retry-all --limit 2 --queue shop --config " + cfg + " --database-url " + vocab.ShellQuote(redact.DatabaseAddress(d.url)); command != want {
		t.Fatalf("relayed %q; want %q, with the server's configuration file as an absolute path", command, want)
	}
	// Run as relayed without its --database-url and with no DATABASE_URL,
	// the file leads it to the server's database: it says what it would
	// retry there.
	out := pgbus(t, nil, strings.Fields(strings.TrimPrefix(strings.TrimSuffix(command, " --database-url "+vocab.ShellQuote(redact.DatabaseAddress(d.url))), "pgbus "))...)
	if out.code != 2 || !strings.Contains(out.stderr+out.stdout, "without --yes") || !strings.Contains(out.stderr+out.stdout, "shop") {
		t.Errorf("%s run as relayed: exit %d\nstdout: %s\nstderr: %s\nwant it to say what it would retry in shop's DLQ without --yes", command, out.code, out.stdout, out.stderr)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("the relayed command, not confirmed, changed the database:\nbefore: %s\nafter:  %s", before, after)
	}
}

// A server whose database URL came from the environment, as an MCP
// client's configuration sets it, relays commands that carry the database
// it names, without who connects: the operator's shell lacks the
// variable, and a command without it would run against the embedded
// default database; the operator runs it as their own role (a write a
// read-only server relays is for a role that may write), and the agent
// is not told the server's role or password.
func TestServeRelaysItsDatabaseURL(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	deadShop(t, d)
	u, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	role := u.User.Username()
	u.User = url.UserPassword(role, "s3cret-Passw0rd")
	c, _, stderr := serveStdioEnv(t, "cli-test", []string{"DATABASE_URL=" + u.String()}, "--read-only", "--no-workers")
	res := callToolRaw(t, c, "pgbus_dlq_discard", map[string]any{"queue": "shop", "limit": 2})
	text := toolText(res)
	_, command, ok := strings.Cut(text, "an operator can run: ")
	if !res.IsError || !ok {
		t.Fatalf("pgbus_dlq_discard on a read-only server: %q; want a refusal naming the command\nserve's stderr: %s", text, stderr.String())
	}
	if strings.Contains(text, "s3cret-Passw0rd") || strings.Contains(text, role+"@") || strings.Contains(text, role+":") {
		t.Fatalf("the refusal shows the server's role or password: %q", text)
	}
	u.User = nil
	if want := "pgbus dlq discard --limit 2 --queue shop --database-url " + vocab.ShellQuote(u.String()); command != want {
		t.Fatalf("relayed %q; want %q, the discard with the server's database and no role", command, want)
	}
}
