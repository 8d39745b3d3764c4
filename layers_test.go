package main_test

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

// layers are the rows of ARCHITECTURE.md's table of layers, from the top:
// a package imports only packages of its own row or of the rows below it.
// Every other package of the module but the end-to-end tests is support,
// under them all.
var layers = [][]string{
	{"internal/cli"},
	{"internal/runner", "internal/demo", "internal/dbopen", "internal/bench"},
	{"tools", "resources", "mcpserver", "dashboard", "metrics"},
	{"internal/config"},
	{"alerts"},
	{"internal/vocab"},
	{"tracing"},
	{"ops"},
	{"engine", "handlers", "internal/startwait"},
	{"store", "schema"},
}

// above lists the packages of the rows above pkg's.
func above(pkg string) []string {
	var out []string
	for _, row := range layers {
		if slices.Contains(row, pkg) {
			return out
		}
		out = append(out, row...)
	}
	return nil
}

// TestLayers keeps the layers of ARCHITECTURE.md apart, by the imports of
// each package's own (non-test) files: no layer imports one above it,
// support packages import no layer (but the test database, which fills
// one through engine and store), and front ends reach the database only
// through the operations layer.
func TestLayers(t *testing.T) {
	frontEnds := []string{"internal/cli", "tools", "resources", "mcpserver", "dashboard", "metrics", "internal/vocab"}
	flags := []string{"flag", "github.com/spf13/cobra", "github.com/spf13/pflag"}
	type rule struct {
		pkgs      []string
		forbidden []string // packages of this module, by their path in it
		// foreign are other import paths, for what a layer never does
		// that a library gives away.
		foreign []string
	}
	var rules []rule
	var inLayers []string
	for _, row := range layers {
		for _, pkg := range row {
			rules = append(rules, rule{pkgs: []string{pkg}, forbidden: above(pkg)})
		}
		inLayers = append(inLayers, row...)
	}
	rules = append(rules, []rule{
		{pkgs: []string{"internal/cli", "metrics"}, forbidden: []string{"store", "schema"}},
		{pkgs: []string{"tools", "resources", "mcpserver", "dashboard"}, forbidden: []string{"store", "schema", "engine", "handlers"}},
		// Next steps are worded from the operations' own hints: the
		// wording knows no engine and no database.
		{pkgs: []string{"internal/vocab"}, forbidden: []string{"store", "schema", "engine", "handlers"}},
		{pkgs: []string{"ops"}, forbidden: append([]string{"internal/runner", "internal/config"}, frontEnds...)},
		{pkgs: []string{"engine", "handlers", "internal/startwait"}, forbidden: append([]string{"ops", "internal/runner", "alerts"}, frontEnds...)},
		{pkgs: []string{"store"}, forbidden: append([]string{"engine", "handlers", "ops", "internal/runner", "alerts"}, frontEnds...)},
		// Processes run what the command line parsed: they never parse
		// flags, and never import the command line that calls them.
		{pkgs: []string{"internal/runner", "internal/demo", "internal/dbopen", "internal/bench"}, forbidden: []string{"internal/cli"}, foreign: flags},
		// The configuration file is one of the settings the command line
		// puts in order; its flags are the command line's.
		{pkgs: []string{"internal/config"}, foreign: flags},
		// Alerts read through ops and keep their checks through the
		// store's calls; they write no SQL of their own (schema), and
		// the processes and front ends above them start them.
		{pkgs: []string{"alerts"}, forbidden: append([]string{"schema", "internal/runner"}, frontEnds...)},
		// Tracing observes the engine and ops, and carries trace context
		// in the store's headers; it writes no SQL (schema), and the
		// layers above it set it up.
		{pkgs: []string{"tracing"}, forbidden: append([]string{"schema", "internal/runner", "alerts"}, frontEnds...)},
		// The migrations are SQL files the store runs: nothing of pgbus
		// runs in them.
		{pkgs: []string{"schema"}, forbidden: []string{"store"}},
	}...)
	// Support packages serve every layer, so they import none, but for
	// the test database, which only tests import: it fills a database
	// through the engine and the store.
	for _, pkg := range packageDirs(t) {
		if slices.Contains(inLayers, pkg) || pkg == "e2e" || strings.HasPrefix(pkg, "e2e/") {
			continue
		}
		forbidden := inLayers
		if pkg == "internal/pgtest" {
			forbidden = slices.DeleteFunc(slices.Clone(inLayers), func(p string) bool { return p == "engine" || p == "store" })
		}
		rules = append(rules, rule{pkgs: []string{pkg}, forbidden: forbidden})
	}
	for _, r := range rules {
		for _, pkg := range r.pkgs {
			for _, imp := range packageImports(t, pkg) {
				rel, ok := strings.CutPrefix(imp, "github.com/pgbus/pgbus/")
				if ok && slices.Contains(r.forbidden, rel) || !ok && slices.Contains(r.foreign, imp) {
					t.Errorf("%s imports %s: that crosses the layers (see ARCHITECTURE.md); go through the layer between them", pkg, rel)
				}
			}
		}
	}
}

// packageImports lists the imports of the non-test Go files in dir, which
// holds at least one.
func packageImports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	read := false
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		read = true
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
	if !read {
		t.Fatalf("%s: no Go file read; is the package still there?", dir)
	}
	return out
}
