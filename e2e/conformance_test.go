package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureRun starts the output of the conformance script's second run,
// the active suite against the fixture server.
const fixtureRun = "conformance: === fixture server: the active suite ==="

// The MCP conformance suite's server scenarios pass: every scenario of the
// active suite against the fixture server (conformance/fixture: pgbus's
// MCP server stack with the suite's fixture tools, resources, prompts and
// completion added), and against pgbus serve --transport http those that
// do not call the fixtures. The suite fails a run when a scenario fails
// that is not expected to (baseline.yml lists none; against pgbus serve,
// the fixture-only ones), or one expected to fail passes.
func TestConformanceSuite(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("bash", "conformance/run")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance suite: %v\n%s", err, out)
	}
	product, fixture, ok := strings.Cut(string(out), fixtureRun)
	if !ok {
		t.Fatalf("no run against the fixture server:\n%s", out)
	}
	for _, scenario := range []string{"server-initialize", "logging-set-level", "tools-list", "dns-rebinding-protection", "server-sse-multiple-streams"} {
		if !strings.Contains(product, "✓ "+scenario+":") {
			t.Errorf("scenario %s did not pass against pgbus serve:\n%s", scenario, product)
		}
	}
	for _, scenario := range []string{
		"server-initialize", "tools-call-simple-text", "tools-call-with-logging", "tools-call-with-progress",
		"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
		"resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-get-embedded-resource", "completion-complete",
		"dns-rebinding-protection",
	} {
		if !strings.Contains(fixture, "✓ "+scenario+":") {
			t.Errorf("scenario %s did not pass against the fixture server:\n%s", scenario, fixture)
		}
	}
	if strings.Contains(fixture, "✗ ") {
		t.Errorf("a scenario failed against the fixture server:\n%s", fixture)
	}
	for name, run := range map[string]string{"pgbus serve": product, "the fixture server": fixture} {
		if !strings.Contains(run, "Baseline check passed") {
			t.Errorf("the baseline check against %s did not pass:\n%s", name, run)
		}
	}
}

// When the suite fails, the run prints why each check failed that was not
// expected to, from the results the suite saved: its own summary names
// only the scenario.
func TestConformanceFailuresSayWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	save := func(scenario, checks string) {
		d := filepath.Join(dir, "server-"+scenario+"-2026-12-03T18-40-12-345Z")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "checks.json"), []byte(checks), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	save("tools-call-with-progress", `[{"name":"ToolsCallWithProgress","status":"FAILURE","description":"progress",
		"errorMessage":"expected 3 progress notifications, got 1","details":{"received":1}},
		{"name":"ServerInitialize","status":"SUCCESS","description":"init"}]`)
	save("tools-call-image", `[{"name":"ToolsCallImage","status":"FAILURE","description":"image","errorMessage":"unknown tool"}]`)
	save("ping", `[{"name":"Ping","status":"SUCCESS","description":"ping"}]`)
	expected := filepath.Join(dir, "expected.yml")
	if err := os.WriteFile(expected, []byte("server:\n  - tools-call-image # calls a fixture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", "conformance/failed-checks.mjs", dir, expected).CombinedOutput()
	if err != nil {
		t.Fatalf("failed-checks: %v\n%s", err, out)
	}
	want := "conformance: tools-call-with-progress: ToolsCallWithProgress failed: expected 3 progress notifications, got 1\n" +
		"  details: {\"received\":1}\n"
	if string(out) != want {
		t.Fatalf("failed-checks printed:\n%s\nwant only the unexpected failure, with its message and details:\n%s", out, want)
	}
}
