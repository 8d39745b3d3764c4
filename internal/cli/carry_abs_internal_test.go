package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Next steps carried --config and --data-dir as given: a relative path,
// run from another directory, found no file, or another one naming another
// database. They now carry them as absolute paths.
func TestCarriedPathsAreAbsolute(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	a := &app{}
	a.carryFrom(func(name string) (string, bool) {
		switch name {
		case "config":
			return "pgbus.yaml", true
		case "data-dir":
			return "data", true
		}
		return "", false
	})
	for _, want := range []string{" --config " + filepath.Join(wd, "pgbus.yaml"), " --data-dir " + filepath.Join(wd, "data")} {
		if !strings.Contains(a.carry, want) {
			t.Errorf("carried %q; want %q", a.carry, want)
		}
	}
}
