package e2e_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The MCP conformance suite's server scenarios pass against pgbus serve
// --transport http, except those its baseline lists (they call the suite's
// own fixture tools, resources and prompts, or argument completion); the
// suite fails the run when any other scenario fails or a listed one passes.
func TestConformanceSuite(t *testing.T) {
	cmd := exec.Command("bash", "conformance/run")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance suite: %v\n%s", err, out)
	}
	for _, scenario := range []string{"logging-set-level", "resources-subscribe", "dns-rebinding-protection", "server-initialize"} {
		if !strings.Contains(string(out), "✓ "+scenario+":") {
			t.Errorf("scenario %s did not pass:\n%s", scenario, out)
		}
	}
	if !strings.Contains(string(out), "Baseline check passed") {
		t.Errorf("the baseline check did not pass:\n%s", out)
	}
}
