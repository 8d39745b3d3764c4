package main_test

import (
	"os"
	"strings"
	"testing"
)

// The README's Go section is the code of Example_goAPI, which go test
// compiles and runs: a change to one without the other fails here.
func TestREADMEGoSectionIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Using it from Go\n")
	if !ok {
		t.Fatal("README.md has no section \"Using it from Go\"")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("the Go section has no go block")
	}
	block, _, _ = strings.Cut(block, "```")

	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "// README:begin\n")
	body, _, ok = strings.Cut(body, "\t// README:end")
	if !ok {
		t.Fatal("example_test.go has no README:begin/README:end markers")
	}
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	want := strings.TrimSpace(strings.Join(lines, "\n"))
	if got := strings.TrimSpace(block); got != want {
		t.Fatalf("README.md's Go block differs from Example_goAPI; copy the example's code between its markers into the README.\nREADME:\n%s\n\nexample:\n%s", got, want)
	}
}
