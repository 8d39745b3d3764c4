package cli_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/tools"
)

// Every age the purge's help names for "all of them" is one the flag
// takes: a dry run with it counts, where a refused one would exit 2.
func TestPurgeHelpAgesForAllAreTaken(t *testing.T) {
	t.Parallel()
	help := pgbus(t, nil, "dlq", "purge", "--help").stdout
	m := regexp.MustCompile(`; ([^;:()]+): all of them`).FindStringSubmatch(strings.Join(strings.Fields(help), " "))
	if m == nil {
		t.Fatalf("pgbus dlq purge --help names no age for all of them:\n%s", help)
	}
	d := newDB(t)
	d.ok(t, "queue", "create", "shop")
	for _, age := range strings.Split(m[1], " or ") {
		if out := d.ok(t, "dlq", "purge", "--queue", "shop", "--older-than", age, "--dry-run"); !strings.HasPrefix(out, "would purge 0 archived dead messages") {
			t.Errorf("pgbus dlq purge --older-than %s --dry-run: %q; want a count of all of them", age, out)
		}
	}
}

// A date written into an example goes stale: once past, a --deadline of it
// is refused and a --since of it lists more every day. The examples give
// times relative to now (24h, 7d), or dates still to come.
func TestExamplesHaveNoPastDates(t *testing.T) {
	t.Parallel()
	date := regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?`)
	for _, r := range defaultHelpPages(t) {
		path := r.path
		for _, line := range exampleLines(r.stdout) {
			for _, s := range date.FindAllString(line, -1) {
				at, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					at, err = time.Parse(time.DateOnly, s)
				}
				if err != nil {
					t.Errorf("pgbus %s --help: example %q has %s, which reads as no date", strings.Join(path, " "), strings.TrimSpace(line), s)
				} else if at.Before(time.Now()) {
					t.Errorf("pgbus %s --help: example %q has %s, which has passed: give a time relative to now", strings.Join(path, " "), strings.TrimSpace(line), s)
				}
			}
		}
	}
}

// exampleLines returns the lines of a help page's Examples section.
func exampleLines(help string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == "Examples:":
			in = true
		case in && line != "" && !strings.HasPrefix(line, " "):
			return out
		case in:
			out = append(out, line)
		}
	}
	return out
}

// --json's help names the MCP tool whose JSON it prints only where the MCP
// server has that tool; send, queue drop and queue purge have none.
func TestJSONFlagNamesOnlyRealTools(t *testing.T) {
	t.Parallel()
	tool := regexp.MustCompile(`MCP tool (pgbus_\w+)'s`)
	without := map[string]bool{"send": true, "queue drop": true, "queue purge": true}
	named := 0
	for _, page := range defaultHelpPages(t) {
		cmd, help := page.name(), page.stdout
		i := strings.Index(help, "      --json ")
		if i < 0 {
			if without[cmd] {
				t.Errorf("pgbus %s --help has no --json", cmd)
			}
			continue
		}
		line, _, _ := strings.Cut(help[i:], "\n")
		m := tool.FindStringSubmatch(line)
		switch {
		case without[cmd] && strings.Contains(line, "the same as"):
			t.Errorf("pgbus %s --help: %q; no MCP tool does it", cmd, strings.TrimSpace(line))
		case m != nil && !slices.Contains(tools.Names(), m[1]):
			t.Errorf("pgbus %s --help: %q names a tool the MCP server does not have", cmd, strings.TrimSpace(line))
		case m != nil:
			named++
		}
	}
	if named < 15 {
		t.Errorf("%d commands' --json name their MCP tool; want one for each tool (15 or more)", named)
	}
}

// pgbus dlq help [command] is pgbus help dlq [command], as help is a
// command of every group.
func TestGroupHelpIsHelp(t *testing.T) {
	t.Parallel()
	for _, c := range [][2][]string{
		{{"dlq", "help"}, {"help", "dlq"}},
		{{"queue", "help", "create"}, {"help", "queue", "create"}},
		{{"circuit", "help"}, {"help", "circuit"}},
	} {
		got, want := pgbus(t, nil, c[0]...), pgbus(t, nil, c[1]...)
		if got.code != 0 || want.code != 0 || got.stdout != want.stdout || want.stdout == "" {
			t.Errorf("pgbus %s: exit %d\n%s%s\nwant the help of pgbus %s:\n%s", strings.Join(c[0], " "), got.code, got.stdout, got.stderr, strings.Join(c[1], " "), want.stdout)
		}
	}
}

// The write tools pgbus serve --help says --read-only leaves out, in its
// text and in the flag's, are those a read-only server does not list.
func TestServeHelpNamesTheToolsReadOnlyLeavesOut(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	listed := func(args ...string) []string {
		c, _, _ := serveStdio(t, append([]string{"--database-url", url, "--no-workers"}, args...)...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	all := listed() // migrates the database the read-only server only checks
	readOnly := listed("--read-only")
	var left []string
	for _, name := range all {
		if !slices.Contains(readOnly, name) {
			left = append(left, name)
		}
	}
	slices.Sort(left)
	if len(left) == 0 {
		t.Fatalf("a read-only server lists every tool: %q", readOnly)
	}
	help := strings.Join(strings.Fields(pgbus(t, nil, "serve", "--help").stdout), " ")
	for _, re := range []string{`--read-only leaves out the write tools: ([^.]*)\.`, `the write tools \(([^)]*)\) are not listed`} {
		m := regexp.MustCompile(re).FindStringSubmatch(help)
		if m == nil {
			t.Errorf("pgbus serve --help does not match %s", re)
			continue
		}
		said := strings.Split(m[1], ", ")
		slices.Sort(said)
		if !slices.Equal(said, left) {
			t.Errorf("pgbus serve --help says --read-only leaves out %q; a read-only server leaves out %q", said, left)
		}
	}
}

// pgbus dashboard --read-only names every action its pages offer, each a
// form a read-only dashboard leaves out.
func TestDashboardReadOnlyNamesEveryAction(t *testing.T) {
	t.Parallel()
	help := pgbus(t, nil, "dashboard", "--help").stdout
	i := strings.Index(help, "      --read-only ")
	if i < 0 {
		t.Fatalf("pgbus dashboard --help has no --read-only flag:\n%s", help)
	}
	line, _, _ := strings.Cut(help[i:], "\n")
	for _, action := range []string{"retry", "discard", "restore", "correct", "pause", "resume", "run now", "circuit reset", "circuit open"} {
		if !strings.Contains(line, action) {
			t.Errorf("pgbus dashboard --help: %q does not name %s", line, action)
		}
	}
}

// Every command's help shows examples, and every command's help says more
// than its one-line summary, groups (dlq, queue, circuit) included.
func TestEveryCommandHasExamplesAndLongHelp(t *testing.T) {
	t.Parallel()
	for _, page := range defaultHelpPages(t)[1:] { // pgbus's own page lists commands
		help := page.stdout
		if len(exampleLines(help)) == 0 {
			t.Errorf("pgbus %s --help has no examples", page.name())
		}
		if intro, _, _ := strings.Cut(help, "\nUsage:"); strings.Count(strings.TrimSpace(intro), "\n") < 1 {
			t.Errorf("pgbus %s --help says only %q before its usage", page.name(), strings.TrimSpace(intro))
		}
	}
}

// A flag given empty is refused (exit 2), so no help page or refusal
// offers an empty value for what leaving the flag out does: the embedded
// PostgreSQL without --database-url, the dashboard at / without
// --base-path.
func TestNoHelpOffersEmptyValues(t *testing.T) {
	t.Parallel()
	dead := "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, args := range [][]string{{"health", "--database-url", ""}, {"dashboard", "--base-path", ""}} {
		if r := usageRun(t, []string{dead}, args...); r.code != 2 || !strings.Contains(r.stderr, "leave the flag out") {
			t.Errorf("pgbus %q: exit %d, %q; want exit 2 saying to leave the flag out", args, r.code, r.stderr)
		}
	}
	empty := regexp.MustCompile(`(?i)\bempty (starts|serves|uses|means)|leave (it|the flag) empty`)
	said := false
	for _, p := range defaultHelpPages(t) {
		text := strings.Join(strings.Fields(p.stdout), " ")
		if m := empty.FindString(text); m != "" {
			t.Errorf("pgbus %s --help says %q, though an empty value is refused", p.name(), m)
		}
		said = said || strings.Contains(text, "leave it out, with none of those set, to start the embedded PostgreSQL")
	}
	if !said {
		t.Error("no help page says that --database-url left out starts the embedded PostgreSQL")
	}
	r := usageRun(t, []string{dead}, "dashboard", "--base-path", "pgbus")
	if r.code != 2 || empty.MatchString(r.stderr) || !strings.Contains(r.stderr, "leave it out to serve at /") {
		t.Errorf("dashboard --base-path pgbus: exit %d, %q; want exit 2 saying to leave it out to serve at /", r.code, r.stderr)
	}
}

// What queue messages --help says of a job a stopping worker gave back is
// what work --help says, and what the worker does: visible again at once
// when its handler returned on the stop, after the visibility timeout
// only when the handler ignored it, so that it is scheduled only then.
func TestGivenBackJobsHelpSaysWhenTheyRunAgain(t *testing.T) {
	t.Parallel()
	for _, path := range [][]string{{"work"}, {"queue", "messages"}} {
		help := strings.Join(strings.Fields(pgbus(t, nil, append(path, "--help")...).stdout), " ")
		if !strings.Contains(help, "visible again at once") || !strings.Contains(help, "ignored the") && !strings.Contains(help, "ignores the") {
			t.Errorf("pgbus %s --help does not say that a job given back runs again at once unless its handler ignored the stop:\n%s", strings.Join(path, " "), help)
		}
	}
}

// Every command's description, before its usage, is wrapped: no line of
// its paragraphs is longer than 80 characters, where pgbus help queue had
// one of 107 in the middle of a paragraph. Indented lines (commands,
// tables, SQL to copy) are left as they are written.
func TestHelpDescriptionsAreWrapped(t *testing.T) {
	t.Parallel()
	for _, page := range defaultHelpPages(t) {
		intro, _, _ := strings.Cut(page.stdout, "\nUsage:")
		for line := range strings.Lines(intro) {
			if line = strings.TrimRight(line, "\n"); !strings.HasPrefix(line, " ") && utf8.RuneCountInString(line) > 80 {
				t.Errorf("pgbus %s --help: a line of %d characters in its description: %q", page.name(), utf8.RuneCountInString(line), line)
			}
		}
	}
}

// pgbus dashboard --help says what /readyz waits for as the probe answers:
// 503 while the database answers but its schema is not ready (none yet,
// being migrated, older than a --read-only dashboard reads), not only
// while the database does not answer.
func TestDashboardHelpSaysReadyzWaitsForTheSchema(t *testing.T) {
	t.Parallel()
	help := strings.Join(strings.Fields(pgbus(t, nil, "dashboard", "--help").stdout), " ")
	_, rest, found := strings.Cut(help, "/readyz (")
	clause, _, _ := strings.Cut(rest, ")")
	if !found || !strings.Contains(clause, "schema") {
		t.Fatalf("pgbus dashboard --help says /readyz (%s); want it to say it waits for the schema to be ready too", clause)
	}
}
