package engine_test

import (
	"os"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// TestMain runs the tests, or, when a test started this binary as a child
// worker process, that worker instead: a worker is no test, and run as
// one it would be counted among those that passed.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv(crashEnvWorker) == "1":
		os.Exit(crashWorker())
	case os.Getenv(breakerEnvChild) == "1":
		os.Exit(breakerWorker())
	}
	os.Exit(pgtest.Main(m))
}
