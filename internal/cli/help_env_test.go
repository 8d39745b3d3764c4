package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
)

// pgbus help config, which says where every setting comes from, names
// every PGBUS_ variable a command reads, so that one added with a flag is
// not left to be found in a single command's --help.
func TestHelpConfigNamesEveryVariable(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	variable := regexp.MustCompile(`"(PGBUS_[A-Z0-9_]*[A-Z0-9])"`)
	read := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range variable.FindAllStringSubmatch(string(src), -1) {
			read[m[1]] = f
		}
	}
	if len(read) < 10 {
		t.Fatalf("found %d PGBUS_ variables in the commands' code (%v); is the pattern still right?", len(read), read)
	}
	r := pgbus(t, nil, "help", "config")
	if r.code != 0 {
		t.Fatalf("pgbus help config: exit %d\n%s", r.code, r.stderr)
	}
	for name, file := range read {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(r.stdout) {
			t.Errorf("pgbus help config does not name %s, which %s reads: add it to the environment variables it lists", name, file)
		}
		// Nor is it taken for a misspelling of another.
		if !slices.Contains(cli.KnownVariables, name) {
			t.Errorf("%s reads %s, which the known variables leave out", file, name)
		}
	}
}

// A PGBUS_ variable a letter or two from one pgbus reads is warned of, as
// a misspelling that leaves the setting as it was; the variables pgbus
// sets for exec handlers' programs, and names far from any, are not.
func TestMisspelledVariableIsWarnedOf(t *testing.T) {
	t.Parallel()
	r := usageRun(t, []string{"PGBUS_LOG_LEVLE=debug", "PGBUS_QUEUE=orders", "PGBUS_MYAPP_REGION=eu"}, "dlq", "list", "--limit", "0")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "environment variable PGBUS_LOG_LEVLE is set, but pgbus reads no variable of that name: did you mean PGBUS_LOG_LEVEL?") {
		t.Errorf("no warning of the misspelled variable:\n%s", r.stderr)
	}
	for _, name := range []string{"PGBUS_QUEUE ", "PGBUS_MYAPP_REGION"} {
		if strings.Contains(r.stderr, name) {
			t.Errorf("a warning of %s:\n%s", name, r.stderr)
		}
	}
}
