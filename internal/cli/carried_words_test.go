package cli_test

import (
	"strings"
	"testing"
)

// The commands the CLI names in its own words, outside the next: lines (an
// empty list's way to begin, the command an unknown subcommand stands
// for), keep the global flags the command was given, as its next steps
// do: run as printed without --config or --database-url they went to the
// embedded database.
func TestWordedCommandsKeepTheGlobalFlags(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	cfg := writeFile(t, "pgbus.yaml", "database_url: "+d.url+"\n")
	withConfig := " --config " + cfg
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"queues", "--config", cfg}, 0, []string{"pgbus queue create NAME" + withConfig, "pgbus demo" + withConfig}},
		{[]string{"workers", "--config", cfg}, 0, []string{"start one with pgbus work" + withConfig}},
		{[]string{"queue", "list", "--config", cfg}, 2, []string{"that is pgbus queues" + withConfig}},
		{[]string{"dlq", "ls", "--config", cfg}, 2, []string{"that is pgbus dlq list" + withConfig}},
		{[]string{"queues", "--database-url", d.url}, 0, []string{"pgbus queue create NAME --database-url ", "pgbus demo --database-url "}},
		{[]string{"workers", "--database-url", d.url}, 0, []string{"start one with pgbus work --database-url "}},
		{[]string{"dlq", "ls", "--database-url", d.url}, 2, []string{"that is pgbus dlq list --database-url "}},
		// Given after a flag the group does not take, where its parse
		// stopped, they are kept all the same.
		{[]string{"queue", "list", "--json", "--config", cfg}, 2, []string{"that is pgbus queues" + withConfig}},
		{[]string{"dlq", "ls", "--queue", "orders", "--limit", "5", "--database-url", d.url}, 2, []string{"that is pgbus dlq list --database-url "}},
		{[]string{"--config", cfg, "queue", "list", "--json", "--data-dir", "/srv/pgbus data"}, 2, []string{"that is pgbus queues" + withConfig + " --data-dir '/srv/pgbus data'"}},
	} {
		r := pgbus(t, nil, c.args...)
		if r.code != c.code {
			t.Errorf("pgbus %s: exit %d, want %d\n%s%s", strings.Join(c.args, " "), r.code, c.code, r.stdout, r.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("pgbus %s printed\n%s%s\nwant %q", strings.Join(c.args, " "), r.stdout, r.stderr, w)
			}
		}
	}
}
