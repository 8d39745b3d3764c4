package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayers keeps the layers of ARCHITECTURE.md apart, by the imports of
// each package's own (non-test) files: front ends reach the database only
// through the operations layer, and no layer imports one above it.
func TestLayers(t *testing.T) {
	frontEnds := []string{"internal/cli", "tools", "resources", "mcpserver", "dashboard", "metrics", "internal/vocab"}
	rules := []struct {
		pkgs      []string
		forbidden []string // packages of this module, by their path in it
		// foreign are other import paths, for what a layer never does
		// that a library gives away.
		foreign []string
	}{
		{pkgs: []string{"internal/cli", "metrics"}, forbidden: []string{"store", "schema"}},
		{pkgs: []string{"tools", "resources", "mcpserver", "dashboard"}, forbidden: []string{"store", "schema", "engine", "handlers"}},
		{pkgs: []string{"ops"}, forbidden: append([]string{"internal/runner", "internal/config"}, frontEnds...)},
		{pkgs: []string{"engine", "handlers"}, forbidden: append([]string{"ops", "internal/runner", "alerts"}, frontEnds...)},
		{pkgs: []string{"store"}, forbidden: append([]string{"engine", "handlers", "ops", "internal/runner", "alerts"}, frontEnds...)},
		// Processes run what the command line parsed: they never parse
		// flags, and never import the command line that calls them.
		{pkgs: []string{"internal/runner"}, forbidden: []string{"internal/cli"}, foreign: []string{"flag", "github.com/spf13/cobra", "github.com/spf13/pflag"}},
		// Alerts read through ops and keep their checks through the
		// store's calls; they write no SQL of their own (schema), and
		// the processes and front ends above them start them.
		{pkgs: []string{"alerts"}, forbidden: append([]string{"schema", "internal/runner"}, frontEnds...)},
		// Tracing observes the engine and ops, and carries trace context
		// in the store's headers; it writes no SQL (schema), and the
		// layers above it set it up.
		{pkgs: []string{"tracing"}, forbidden: append([]string{"schema", "internal/runner", "alerts"}, frontEnds...)},
	}
	for _, r := range rules {
		for _, pkg := range r.pkgs {
			imports := packageImports(t, pkg)
			if len(imports) == 0 {
				t.Fatalf("%s: no imports read; is the package still there?", pkg)
			}
			for _, imp := range imports {
				rel, ok := strings.CutPrefix(imp, "github.com/pgbus/pgbus/")
				if ok && slices.Contains(r.forbidden, rel) || !ok && slices.Contains(r.foreign, imp) {
					t.Errorf("%s imports %s: that crosses the layers (see ARCHITECTURE.md); go through the layer between them", pkg, rel)
				}
			}
		}
	}
}

// packageImports lists the imports of the non-test Go files in dir.
func packageImports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			out = append(out, path)
		}
	}
	return out
}
