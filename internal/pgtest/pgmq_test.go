package pgtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// envAskForScript makes TestPGMQScriptAbsentFails's child run ask for the
// script and nothing else.
const envAskForScript = "PGTEST_ASK_FOR_PGMQ_SCRIPT"

// A missing PGMQ script fails the tests that need it, saying where it was
// looked for and how to give it: skipped, they would count as passing.
func TestPGMQScriptAbsentFails(t *testing.T) {
	if os.Getenv(envAskForScript) != "" {
		pgtest.PGMQScriptPath(t)
		return
	}
	missing := filepath.Join(t.TempDir(), "pgmq.sql")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPGMQScriptAbsentFails$", "-test.v")
	cmd.Env = append(os.Environ(), envAskForScript+"=1", pgtest.EnvPGMQScript+"="+missing)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the test asking for an absent script passed:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestPGMQScriptAbsentFails", missing, pgtest.EnvPGMQScript, "pgmq-extension/sql/pgmq.sql"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("the test was skipped:\n%s", out)
	}
}
