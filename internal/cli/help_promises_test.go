package cli_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
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
	commands := append([][]string{nil}, helpCommands(t, nil, nil)...)
	for _, path := range commands {
		r := pgbus(t, nil, append(path, "--help")...)
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
