package handlers_test

import (
	"os"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// helperProcesses are the child processes tests start from this binary, by
// the environment variable that names each: TestMain runs the one whose
// variable is set, given its value, instead of the tests, so that a helper
// is not counted among the tests that passed.
var helperProcesses = map[string]func(value string) int{}

func TestMain(m *testing.M) {
	for env, run := range helperProcesses {
		if v := os.Getenv(env); v != "" {
			os.Exit(run(v))
		}
	}
	os.Exit(pgtest.Main(m))
}
