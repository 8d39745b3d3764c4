package metrics_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The README's table of metrics lists every family a process registers,
// with its type and, for those with a sample here, its labels, and no
// family that is not registered: a scraper configured from it finds what
// it was told.
func TestREADMEListsEveryMetric(t *testing.T) {
	fams := registered(t)
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), "\n| metric | type | labels | what |\n")
	if !ok {
		t.Fatal("README.md has no table of metrics (| metric | type | labels | what |)")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	listed := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Errorf("README.md's metrics row %q has no type and labels", line)
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		listed[name] = true
		f := fams[name]
		if f == nil {
			t.Errorf("README.md lists %s, which pgbus does not register", name)
			continue
		}
		if typ, want := strings.TrimSpace(cells[2]), strings.ToLower(f.GetType().String()); typ != want {
			t.Errorf("README.md says %s is a %s; it is a %s", name, typ, want)
		}
		if len(f.GetMetric()) == 0 {
			continue
		}
		var labels, want []string
		for _, l := range strings.Split(cells[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			want = append(want, l.GetName())
		}
		slices.Sort(labels)
		slices.Sort(want)
		if !slices.Equal(labels, want) {
			t.Errorf("README.md gives %s the labels %v; it has %v", name, labels, want)
		}
	}
	for name := range fams {
		if !listed[name] {
			t.Errorf("README.md's table of metrics does not list %s", name)
		}
	}
}
