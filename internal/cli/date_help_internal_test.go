package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every flag that takes a time says that a bare date is its midnight in
// UTC, as send --help does, and so does dlq's list of filters.
func TestDateFlagsSayMidnightUTC(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, path := range commandPaths() {
		cmd := commandAt(t, path)
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "since" && f.Name != "until" {
				return
			}
			seen++
			if !strings.Contains(f.Usage, "midnight UTC") {
				t.Errorf("pgbus %s --%s: %q does not say a date is its midnight UTC", strings.Join(path, " "), f.Name, f.Usage)
			}
		})
	}
	if seen == 0 {
		t.Fatal("no command has a --since or --until flag")
	}
	if long := commandAt(t, []string{"dlq"}).Long; !strings.Contains(long, "midnight UTC") {
		t.Errorf("pgbus dlq --help's filters do not say a date is its midnight UTC:\n%s", long)
	}
}
