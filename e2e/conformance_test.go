package e2e_test

import (
	"os/exec"
	"strings"
	"testing"
)

// fixtureRun starts the output of the conformance script's second run,
// the active suite against the fixture server.
const fixtureRun = "conformance: === fixture server: the active suite ==="

// The MCP conformance suite's server scenarios pass: those that need no
// fixtures against pgbus serve --transport http, and every scenario of the
// active suite against the fixture server (conformance/fixture: pgbus's
// MCP server stack with the suite's fixture tools, resources, prompts and
// completion added). The suite fails a run when a scenario fails that
// baseline.yml does not list, or one it lists passes; it lists none.
func TestConformanceSuite(t *testing.T) {
	cmd := exec.Command("bash", "conformance/run")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance suite: %v\n%s", err, out)
	}
	product, fixture, ok := strings.Cut(string(out), fixtureRun)
	if !ok {
		t.Fatalf("no run against the fixture server:\n%s", out)
	}
	for _, scenario := range []string{"server-initialize", "logging-set-level", "resources-subscribe", "dns-rebinding-protection", "server-sse-multiple-streams"} {
		if !strings.Contains(product, "conformance: pgbus serve passed "+scenario+"\n") {
			t.Errorf("scenario %s did not pass against pgbus serve:\n%s", scenario, product)
		}
	}
	for _, scenario := range []string{
		"server-initialize", "tools-call-simple-text", "tools-call-with-logging", "tools-call-with-progress",
		"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
		"resources-templates-read", "resources-subscribe", "prompts-get-embedded-resource", "completion-complete",
		"dns-rebinding-protection",
	} {
		if !strings.Contains(fixture, "✓ "+scenario+":") {
			t.Errorf("scenario %s did not pass against the fixture server:\n%s", scenario, fixture)
		}
	}
	if strings.Contains(fixture, "✗ ") {
		t.Errorf("a scenario failed against the fixture server:\n%s", fixture)
	}
	if !strings.Contains(fixture, "Baseline check passed") {
		t.Errorf("the baseline check did not pass:\n%s", fixture)
	}
}
