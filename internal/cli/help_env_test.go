package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	}
}
