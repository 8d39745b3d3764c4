package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
)

// Every YAML example of the README's Configuration section is a file
// pgbus takes as it is: a key renamed or dropped in the code fails here,
// not for the newcomer who copies the example.
func TestREADMEConfigurationExamplesParse(t *testing.T) {
	t.Setenv("PAGER_TOKEN", "example") // the alerts example's ${PAGER_TOKEN}
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no section Configuration")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	n := 0
	for {
		_, rest, found := strings.Cut(section, "```yaml\n")
		if !found {
			break
		}
		block, next, _ := strings.Cut(rest, "```")
		section = next
		n++
		f, err := config.Parse("README.md", []byte(block))
		if err != nil {
			t.Errorf("README.md's YAML example %d does not parse: %v\n%s", n, err, block)
			continue
		}
		if err := f.CheckHandlers(); err != nil {
			t.Errorf("README.md's YAML example %d has a handler pgbus refuses: %v\n%s", n, err, block)
		}
	}
	if n < 2 {
		t.Fatalf("found %d YAML examples in README.md's Configuration section; want the file's and the alerts'", n)
	}
}
