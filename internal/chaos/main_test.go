package chaos_test

import (
	"os"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// binary is the pgbus command built for the soak; empty when it is skipped.
var binary string

// TestMain builds the pgbus command only when the soak is asked for, so that
// the test suite does not pay for a build it skips.
func TestMain(m *testing.M) {
	if os.Getenv(envChaos) == "" {
		os.Exit(pgtest.Main(m))
	}
	os.Exit(pgtest.MainWithBinary(m, &binary))
}
