package main_test

import (
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
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

	want := exampleCode(t, "README")
	if got := strings.TrimSpace(block); got != want {
		t.Fatalf("README.md's Go block differs from Example_goAPI; copy the example's code between its markers into the README.\nREADME:\n%s\n\nexample:\n%s", got, want)
	}
}

// The README's "Send in your own transaction" shows the code of
// Example_sendInTransaction between its README:tx markers.
func TestREADMESendTxIsTheExample(t *testing.T) {
	section := readmeSubsection(t, "Send in your own transaction")
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("the section \"Send in your own transaction\" has no go block")
	}
	block, _, _ = strings.Cut(block, "```")
	want := exampleCode(t, "README:tx")
	if got := strings.TrimSpace(block); got != want {
		t.Fatalf("README.md's transactional send differs from Example_sendInTransaction; copy the example's code between its README:tx markers into the README.\nREADME:\n%s\n\nexample:\n%s", got, want)
	}
}

// The README's "Send many at once" shows the code of Example_sendBatch
// between its README:batch markers.
func TestREADMESendBatchIsTheExample(t *testing.T) {
	section := readmeSubsection(t, "Send many at once")
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("the section \"Send many at once\" has no go block")
	}
	block, _, _ = strings.Cut(block, "```")
	want := exampleCode(t, "README:batch")
	if got := strings.TrimSpace(block); got != want {
		t.Fatalf("README.md's batch send differs from Example_sendBatch; copy the example's code between its README:batch markers into the README.\nREADME:\n%s\n\nexample:\n%s", got, want)
	}
}

// exampleCode returns the code of example_test.go between the markers
// "// MARK:begin" and "// MARK:end", one tab of indentation taken off.
func exampleCode(t *testing.T, mark string) string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "// "+mark+":begin\n")
	body, _, ok := strings.Cut(body, "\t// "+mark+":end")
	if !ok {
		t.Fatalf("example_test.go has no %s:begin/%s:end markers", mark, mark)
	}
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// readmeSubsection returns the text of one "### " section of README.md,
// up to the next heading.
func readmeSubsection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n### "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ := strings.Cut(rest, "\n#")
	return section
}

// pgbusVar matches a PGBUS_ environment variable's name in a Go string
// literal; the bare prefix, which code uses to tell pgbus's own variables
// apart, is not one.
var pgbusVar = regexp.MustCompile(`"(PGBUS_[A-Z0-9_]*[A-Z0-9])"`)

// envVarsIn returns the PGBUS_ variables named in the non-test Go files
// under dir, each with a file that names it.
func envVarsIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	found := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range pgbusVar.FindAllStringSubmatch(string(src), -1) {
			if _, ok := found[m[1]]; !ok {
				found[m[1]] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// skipDir reports whether the go command leaves a directory out of ./...,
// or it holds no Go of this module.
// skipPath reports whether a slash-separated path lies in a directory
// skipDir skips.
func skipPath(path string) bool {
	return slices.ContainsFunc(strings.Split(path, "/"), skipDir)
}

func skipDir(name string) bool {
	return name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// readmeSection returns the text of one "## " section of README.md.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section
}

// Every PGBUS_ variable pgbus reads or sets is in the README, and every one
// a command reads is in its Configuration table, with the setting's flag
// and file key: a newcomer looks there, not in the code.
func TestREADMENamesEveryEnvironmentVariable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	all := envVarsIn(t, ".")
	if len(all) == 0 {
		t.Fatal("no PGBUS_ variable found in the code; is the pattern still right?")
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		if !names(string(readme), name) {
			t.Errorf("README.md does not name %s, which %s reads or sets: document it where a user looks", name, all[name])
		}
	}
	var rows []string
	for _, line := range strings.Split(readmeSection(t, "Configuration"), "\n") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		}
	}
	table := strings.Join(rows, "\n")
	for name, file := range envVarsIn(t, filepath.Join("internal", "cli")) {
		if !names(table, name) {
			t.Errorf("README.md's Configuration table has no row naming %s, which %s reads: add one with its flag and file key", name, file)
		}
	}
}

// names reports whether text names the variable name as a word of its
// own: PGBUS_QUEUES does not name PGBUS_QUEUE.
func names(text, name string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(text)
}

// packageDirs returns the directories of the module's packages, as
// slash-separated paths from the root, the root itself left out.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	// In a git checkout, the packages are those of the files it tracks:
	// a build's scratch directory below the tree (TMPDIR set inside it)
	// holds Go files that are no package of the project.
	if out, err := exec.Command("git", "ls-files", "--", "*.go").Output(); err == nil && len(out) > 0 {
		for _, path := range strings.Fields(string(out)) {
			if dir := filepath.Dir(path); dir != "." && !skipPath(dir) && !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return dirs
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.ToSlash(filepath.Dir(path)); strings.HasSuffix(path, ".go") && dir != "." && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no package found")
	}
	return dirs
}

// Every package is in the README's Layout table and in ARCHITECTURE.md's
// account of the layers (the end-to-end tests, no part of the binary,
// only in the former): a package added without a word there leaves a
// newcomer to guess what it owns.
func TestDocsNameEveryPackage(t *testing.T) {
	layout := readmeSection(t, "Layout")
	arch, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range packageDirs(t) {
		named := regexp.MustCompile("`" + regexp.QuoteMeta(dir) + "/?`")
		if !named.MatchString(layout) {
			t.Errorf("README.md's Layout table does not name `%s`: add what it holds", dir)
		}
		if dir != "e2e" && !strings.HasPrefix(dir, "e2e/") && !named.MatchString(string(arch)) {
			t.Errorf("ARCHITECTURE.md does not name `%s`: say which layer it is in and what it owns", dir)
		}
	}
}

// fuzzTarget matches the declaration of a Go fuzz target.
var fuzzTarget = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)

// The README's list of fuzz targets, which says how to run each, names
// every one there is.
func TestREADMENamesEveryFuzzTarget(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range packageDirs(t) {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range fuzzTarget.FindAllStringSubmatch(string(src), -1) {
				n++
				if !strings.Contains(string(readme), "`"+m[1]+"`") {
					t.Errorf("README.md does not name the fuzz target %s of %s: add it to the list of fuzz targets", m[1], dir)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no fuzz target found; is the pattern still right?")
	}
}

// The README's account of a tool error's data names every kind word it
// can carry.
func TestREADMENamesEveryToolErrorKind(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(readme), "under `pgbus/error`")
	text, _, _ = strings.Cut(text, "output schema.")
	if !ok {
		t.Fatal("README.md does not describe the _meta of tool errors (under `pgbus/error`)")
	}
	for _, kind := range ops.Kinds() {
		if !strings.Contains(text, "`"+kind+"`") {
			t.Errorf("README.md's account of tool errors does not name the kind %s", kind)
		}
	}
}

// The README's statement that builds migration 19's index beforehand,
// without blocking writes, is the migration's own with CONCURRENTLY: the
// migration finds the index by its name alone, so a statement that
// drifted from it would leave the look-up the index serves without it.
func TestREADMEBuildsTheRetryNoteIndexAsMigration19Does(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	migration, err := os.ReadFile(filepath.Join("schema", "0019_retry_note_index.sql"))
	if err != nil {
		t.Fatal(err)
	}
	_, stmt, ok := strings.Cut(string(migration), "\nCREATE INDEX ")
	if !ok {
		t.Fatal("migration 19 has no CREATE INDEX statement")
	}
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	want := words("CREATE INDEX CONCURRENTLY " + stmt)
	if !strings.Contains(words(string(readme)), want) {
		t.Errorf("README.md does not give migration 19's index as %q", want)
	}
}

// The README's retry settings say when an attempt counts: when a worker
// takes the message, so that a claim lost with its connection, or a
// worker killed before it ran the job, uses one; why (at-least-once,
// PGMQ's read_ct); where a dead message's view says so; and how to give
// max_retries room where connections are lost often.
func TestREADMESaysALostClaimUsesAnAttempt(t *testing.T) {
	t.Parallel()
	text := strings.Join(strings.Fields(readmeSection(t, "Using it from Go")), " ")
	for _, want := range []string{
		"An attempt counts when a worker takes the message, not when its job ends",
		"`read_ct`",
		"a claim whose job never ran uses an attempt all the same",
		"at-least-once delivery",
		"attempt 1 left no outcome",
		"`unrecorded_attempts`",
		"give `max_retries` room for it",
		"--max-retries 6",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README's Using it from Go does not say %q", want)
		}
	}
}

// The README's Migrations say what the migrations that rebuild every DLQ's
// index of error groups, in their one transaction, block: every read and
// write of each DLQ, from its rebuild until the migration commits, so the
// first DLQ rebuilt waits for all the others; each such migration is
// named, and how to estimate the time and when to run it is said.
func TestREADMESaysWhatDLQRebuildsBlock(t *testing.T) {
	t.Parallel()
	_, rest, ok := strings.Cut(readmeSection(t, "Command line"), "\n### Migrations\n")
	if !ok {
		t.Fatal("README.md has no Migrations section under Command line")
	}
	section, _, _ := strings.Cut(rest, "\n### ")
	text := strings.Join(strings.Fields(section), " ")
	files, err := filepath.Glob(filepath.Join("schema", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var rebuilds []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "REINDEX INDEX") && strings.Contains(string(b), "dlq_groups_backfill(") {
			n, _, _ := strings.Cut(filepath.Base(f), "_")
			rebuilds = append(rebuilds, strings.TrimLeft(n, "0"))
		}
	}
	if len(rebuilds) == 0 {
		t.Fatal("no migration rebuilds the DLQs' indexes; is the pattern still right?")
	}
	want := "Migrations " + strings.Join(rebuilds[:len(rebuilds)-1], ", ") + " and " + rebuilds[len(rebuilds)-1] + " rebuild"
	for _, w := range []string{
		want,
		"every read and write of that DLQ",
		"until the whole migration commits",
		"the sum over all DLQs",
		"quiet window",
		"reltuples",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("README's Migrations do not say %q", w)
		}
	}
	if strings.Contains(text, "about as long as `SELECT count(*)` of it takes") {
		t.Error("README's Migrations still say a DLQ's rebuild blocks only dead-lettering, about as long as SELECT count(*) of it takes")
	}
}

// .ci/run runs exactly the README's test command: a change to one without
// the other fails here.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	quick := regexp.MustCompile("(?m)^(go test [^#\n]*?)\\s+# the whole test suite").FindStringSubmatch(string(readme))
	if quick == nil {
		t.Fatal("README.md's quick start has no line \"go test ... # the whole test suite\"")
	}
	script, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(script)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != quick[1] {
		t.Fatalf(".ci/run ends with %q, but the README's test command is %q; make them the same", last, quick[1])
	}
}
