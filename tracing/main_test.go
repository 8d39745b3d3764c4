package tracing_test

import (
	"os"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
