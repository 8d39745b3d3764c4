package ops_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// frontEndWords are the words of one front end: its tools and their
// arguments (MCP), its commands and flags (CLI). The operations layer's
// texts reach every front end, so each front end words how to ask for
// something itself (Ask, Hint).
var frontEndWords = []struct {
	what string
	re   *regexp.Regexp
}{
	{"an MCP tool", regexp.MustCompile(`pgbus_[a-z]`)},
	{"an MCP argument used as an instruction", regexp.MustCompile(`include_payload|full_history|next_cursor as`)},
	{"a CLI command", regexp.MustCompile(`pgbus (dlq|queues?|health|workers|circuits?|audit|migrate|work|send|mcp|dashboard|serve|help|version|config)\b`)},
	{"a CLI flag", regexp.MustCompile(` --[a-z]`)},
	{"the command line", regexp.MustCompile(`command line`)},
	{"a tool", regexp.MustCompile(`\btool `)},
}

// wordExceptions are the string literals of ops allowed a front end's
// word, each with why: what they name is no front end's.
var wordExceptions = map[string]string{
	`"full_history"`: "the value of AskFullHistory, a kind of Ask each front end words, never shown",
	`"pgbus_"`:       "the prefix of the reserved header keys (and of tool names, which the audit log trims)",
	`"header %q: keys starting with pgbus_ are reserved for pgbus; the kind, idempotency key, deadline and priority have fields of their own (kind, idempotency_key, deadline, priority)"`:              "pgbus_ is the prefix of the reserved header keys, not a tool",
	`"reason not recorded: the message has no pgbus_dead_letter block (dead-lettered by a Ruby pgbus from before the block, or put in the DLQ by another client); a retry sends it to the DLQ's queue"`: "pgbus_dead_letter is the header of the dead-letter block, not a tool",
}

// TestNoFrontEndWords keeps the texts of the operations layer (its
// non-test string literals; struct tags, the jsonschema descriptions of
// the MCP contract itself, are not texts it shows) free of any one front
// end's words.
func TestNoFrontEndWords(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if fl, ok := n.(*ast.Field); ok && fl.Tag != nil {
				tags[fl.Tag] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || tags[lit] {
				return true
			}
			if _, ok := wordExceptions[lit.Value]; ok {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			for _, w := range frontEndWords {
				if m := w.re.FindString(s); m != "" {
					t.Errorf("%s: %q names %s (%q): make it an Ask or a Hint for each front end to word, or list it in wordExceptions with why", fset.Position(lit.Pos()), s, w.what, m)
				}
			}
			return true
		})
	}
}

// The guard sees a struct tag as a tag, and a text as a text.
func TestNoFrontEndWordsSeesTags(t *testing.T) {
	t.Parallel()
	src := "package p\ntype T struct{ F int `json:\"f\" jsonschema_description:\"pass it to pgbus_dlq_list\"` }\nvar s = \"run pgbus dlq show on the command line\"\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tag, text int
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Field:
			if x.Tag != nil {
				tag++
			}
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				text++
			}
		}
		return true
	})
	if tag != 1 || text != 2 {
		t.Fatalf("tags %d, string literals %d: a tag is a string literal too, so the guard must leave tags out by hand", tag, text)
	}
}
