package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The commands a server relays to an operator carry the configuration
// file it runs with, as an absolute path: the operator runs them in
// another directory, and without it a command would run against another
// database (here the embedded default) or without the file's handlers.
// The server's database URL is not passed on to the agent.
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
	if want := "pgbus dlq retry-all --limit 2 --queue shop --config " + cfg; command != want {
		t.Fatalf("relayed %q; want %q, with the server's configuration file as an absolute path", command, want)
	}
	if strings.Contains(toolText(res), d.url) || strings.Contains(toolText(res), "database-url") {
		t.Errorf("the refusal passes the server's database URL on to the agent: %q", toolText(res))
	}
	// Run as relayed, with no DATABASE_URL, it reaches the server's
	// database: it says what it would retry there.
	out := pgbus(t, nil, strings.Fields(strings.TrimPrefix(command, "pgbus "))...)
	if out.code != 2 || !strings.Contains(out.stderr+out.stdout, "without --yes") || !strings.Contains(out.stderr+out.stdout, "shop") {
		t.Errorf("%s run as relayed: exit %d\nstdout: %s\nstderr: %s\nwant it to say what it would retry in shop's DLQ without --yes", command, out.code, out.stdout, out.stderr)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("the relayed command, not confirmed, changed the database:\nbefore: %s\nafter:  %s", before, after)
	}
}
