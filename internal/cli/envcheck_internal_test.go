package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every PGBUS_ variable the commands read is known, so that setting it is
// never taken for a misspelling of another.
func TestKnownVariablesAreEveryOneRead(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	variable := regexp.MustCompile(`"(PGBUS_[A-Z0-9_]*[A-Z0-9])"`)
	found := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range variable.FindAllStringSubmatch(string(src), -1) {
			found++
			if !slices.Contains(knownVariables, m[1]) {
				t.Errorf("%s reads %s, which knownVariables leaves out", f, m[1])
			}
		}
	}
	if found < 10 {
		t.Fatalf("found %d PGBUS_ variables in the commands' code; is the pattern still right?", found)
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"PGBUS_LOG_LEVLE", "PGBUS_LOG_LEVEL", 2}, {"PGBUS_QUEUE", "PGBUS_QUEUES", 1}, {"abc", "", 3}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
