package tools_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/tools"
)

// Each tool is defined in a file of its own (ARCHITECTURE.md), so that a
// tool's input type, description and handler are read, and changed, in one
// place: every tool a server lists is made by exactly one file, and no file
// makes two.
func TestOneToolPerFile(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	madeIn := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		ast.Inspect(parsed, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "newTool" {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				name, _ := strconv.Unquote(lit.Value)
				names = append(names, name)
			}
			return true
		})
		if len(names) > 1 {
			t.Errorf("%s makes the tools %q: move each into a file of its own", f, names)
		}
		for _, name := range names {
			madeIn[name] = f
		}
	}
	for _, name := range tools.Names() {
		if madeIn[name] == "" {
			t.Errorf("no file makes %s with newTool and its name as a literal: keep each tool's name in its own file's newTool call", name)
		}
	}
	for name := range madeIn {
		if !slices.Contains(tools.Names(), name) {
			t.Errorf("%s makes %s, which the server does not list", madeIn[name], name)
		}
	}
}
