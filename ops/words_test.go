package ops_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
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
	`"full_history"`:    "the value of AskFullHistory, a kind of Ask each front end words, never shown, and a hint's argument by its request field's name",
	`"include_payload"`: "a hint's argument by its request field's name, as queue and msg_id are, which each front end words",
	`"pgbus_"`:          "the prefix of the reserved header keys (and of tool names, which the audit log trims)",
	`"header %q is refused: keys starting with pgbus_ are reserved for pgbus, which sets them from options of their own: kind, idempotency_key, deadline, priority"`:                                    "pgbus_ is the prefix of the reserved header keys, not a tool",
	`"reason not recorded: the message has no pgbus_dead_letter block (dead-lettered by a Ruby pgbus from before the block, or put in the DLQ by another client); a retry sends it to the DLQ's queue"`: "pgbus_dead_letter is the header of the dead-letter block, not a tool",
}

// TestNoFrontEndWords keeps the texts of the operations layer (its
// non-test string literals; struct tags, the jsonschema descriptions of
// the MCP contract itself, are not texts it shows) free of any one front
// end's words.
func TestNoFrontEndWords(t *testing.T) {
	t.Parallel()
	words := append(slices.Clone(frontEndWords), lowerWords[3]) // a Go program has no DATABASE_URL
	for _, hit := range frontEndWordsIn(t, ".", words, wordExceptions) {
		t.Errorf("%s: make it an Ask or a Hint for each front end to word, or list it in wordExceptions with why", hit)
	}
}

// lowerWords are the words of one front end that the layers below ops
// must not say either: their errors reach every front end through ops, and
// their logs are read by whoever runs the worker, with whatever front end
// they use; a Go program passes the database's URL itself, which its
// errors call the database URL, not the command line's DATABASE_URL. The
// reserved header keys (pgbus_dead_letter, ...) and the flags of other
// programs (pg_restore --schema) are theirs to name, so only the commands,
// the MCP tools, the command line and its variable are looked for (a tool
// is also the audit log's column).
var lowerWords = []struct {
	what string
	re   *regexp.Regexp
}{
	frontEndWords[2], // a CLI command
	{"an MCP tool", regexp.MustCompile(`pgbus_(dlq|queue|health|workers|circuit|audit)_?[a-z_]*\b(\s*\{| tool)`)},
	frontEndWords[4], // the command line
	{"the command line's environment variable", regexp.MustCompile(`DATABASE_URL`)},
}

// TestNoFrontEndWordsBelowOps keeps the texts of store and engine (errors
// and log lines) free of any one front end's commands and tools: a next
// step is data (an error type or sentinel ops gives a Hint), and a
// worker's log says what to do in words that name no front end.
func TestNoFrontEndWordsBelowOps(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"../store", "../engine"} {
		for _, hit := range frontEndWordsIn(t, dir, lowerWords, nil) {
			t.Errorf("%s: say what is wrong, and give the next step as data that ops turns into a Hint", hit)
		}
	}
}

// frontEndWordsIn returns where the non-test string literals of the Go
// files in dir, but struct tags and the exceptions, say one of words.
func frontEndWordsIn(t *testing.T, dir string, words []struct {
	what string
	re   *regexp.Regexp
}, exceptions map[string]string) []string {
	t.Helper()
	var hits []string
	eachText(t, dir, func(at token.Position, lit, s string) {
		if _, ok := exceptions[lit]; ok {
			return
		}
		for _, w := range words {
			if m := w.re.FindString(s); m != "" {
				hits = append(hits, fmt.Sprintf("%s: %q names %s (%q)", at, s, w.what, m))
			}
		}
	})
	return hits
}

// eachText calls see with each string literal of the non-test Go files of
// dir that is a text (struct tags left out): where it is, as written, and
// its value.
func eachText(t *testing.T, dir string, see func(at token.Position, lit, s string)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
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
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			see(fset.Position(lit.Pos()), lit.Value, s)
			return true
		})
	}
}

// TestOwnTextsAreNotRedacted keeps the texts of ops, store and engine,
// which every front end shows redacted, clear of what the redaction takes
// for a secret: "the call's session: an administrator ended it" was shown
// as "session: [REDACTED] administrator ended it".
func TestOwnTextsAreNotRedacted(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "../store", "../engine"} {
		eachText(t, dir, func(at token.Position, _, s string) {
			if out, n := ops.RedactText(s); n > 0 {
				t.Errorf("%s: %q is shown as %q: word it so that no word follows a secret-looking one and a colon or an equals sign", at, s, out)
			}
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
