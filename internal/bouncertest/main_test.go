package bouncertest_test

import (
	"os"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// binary is the pgbus command, built for the tests.
var binary string

func TestMain(m *testing.M) { os.Exit(pgtest.MainWithBinary(m, &binary)) }
