package cli_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus migrate --help names every command that uses the database: among
// those that migrate it on start, or among those that only check that its
// schema is current, each of which, run on a database pgbus never
// migrated, fails saying to run pgbus migrate. A command added later is
// named in neither list until the help says which it does.
func TestMigrateHelpNamesEveryCommandThatChecksTheSchema(t *testing.T) {
	t.Parallel()
	// Commands that use no database, or show their group's help.
	noDatabase := []string{"version", "completion", "completion bash", "completion fish", "completion powershell", "completion zsh", "circuit", "dlq", "queue", "bench worker"}
	// Commands that migrate on start, as the help's sentence before names them.
	migrating := []string{"migrate", "work", "demo", "serve", "dashboard", "queue create", "bench", "bench dlq"}
	// The arguments each command that only checks the schema is run with.
	args := map[string][]string{
		"queues": nil, "health": nil, "workers": nil, "circuits": nil, "audit": nil,
		"dlq summary": nil, "dlq list": nil, "dlq show": {"1"}, "dlq retry": {"1"},
		"dlq retry-all": {"--all", "--dry-run"}, "dlq discard": {"--all", "--dry-run"},
		"dlq discarded": {"--queue", "q"}, "dlq restore": {"1", "--queue", "q"}, "dlq purge": {"--dry-run"},
		"circuit open": {"x", "--for", "1m"}, "circuit reset": {"x"},
		"queue messages": {"q"}, "queue drop": {"q", "--yes"}, "queue pause": {"q"}, "queue resume": {"q"},
		"queue purge": {"q", "--yes"}, "queue run-now": {"q"}, "send": {"q", "{}"},
	}
	help := strings.Join(strings.Fields(pgbus(t, nil, "migrate", "--help").stdout), " ")
	_, rest, found := strings.Cut(help, "fail with a message to run pgbus migrate: ")
	list, _, _ := strings.Cut(rest, ". ")
	if !found || list == "" {
		t.Fatalf("pgbus migrate --help lists no command that only checks the schema:\n%s", help)
	}
	named := checkOnlyCommands(list)
	url := pgtest.NewDatabase(t)
	for _, command := range cli.RunnableCommands() {
		if slices.Contains(noDatabase, command) || slices.Contains(migrating, command) {
			continue
		}
		if !named[command] {
			t.Errorf("pgbus migrate --help does not name pgbus %s among the commands that only check the schema (%s)", command, list)
		}
		a, ok := args[command]
		if !ok {
			t.Errorf("pgbus %s: no arguments to run it with here; add them, and its place in pgbus migrate --help", command)
			continue
		}
		r := pgbus(t, []string{"DATABASE_URL=" + url}, append(strings.Fields(command), a...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "see pgbus migrate") {
			t.Errorf("pgbus %s on a database never migrated: exit %d, %q; want exit 1 saying to run pgbus migrate", command, r.code, r.stderr)
		}
	}
	if got := pgbus(t, []string{"DATABASE_URL=" + url}, "queues").stderr; !strings.Contains(got, "see pgbus migrate") {
		t.Fatalf("the database was migrated by one of the commands that only check it: %q", got)
	}
}

// checkOnlyCommands reads the help's list of commands: "health", "dlq
// (summary, list)" for dlq summary and dlq list, "dashboard --read-only"
// for dashboard.
func checkOnlyCommands(list string) map[string]bool {
	named := map[string]bool{}
	var items []string
	depth, start := 0, 0
	for i, r := range list {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, list[start:i])
				start = i + 1
			}
		}
	}
	items = append(items, list[start:])
	for _, item := range items {
		item = strings.TrimPrefix(strings.TrimSpace(item), "and ")
		if group, subs, ok := strings.Cut(item, " ("); ok {
			for _, sub := range strings.Split(strings.TrimSuffix(subs, ")"), ",") {
				named[group+" "+strings.TrimSpace(sub)] = true
			}
			continue
		}
		words, _, _ := strings.Cut(item, " --")
		named[words] = true
	}
	return named
}
