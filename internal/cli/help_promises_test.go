package cli_test

import (
	"regexp"
	"strings"
	"testing"
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
