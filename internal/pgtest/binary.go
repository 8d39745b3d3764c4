package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MainWithBinary is Main for tests that run the pgbus command as a person
// or a script would: it first builds the command with the race detector into
// a temporary directory and sets *binary to its path, and removes it once
// the tests have run. A failed build fails the run before any test.
func MainWithBinary(m *testing.M, binary *string) int {
	dir, err := os.MkdirTemp("", "pgbus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*binary = filepath.Join(dir, "pgbus")
	build := exec.Command("go", "build", "-race", "-o", *binary, "github.com/pgbus/pgbus")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build pgbus:", err)
		return 1
	}
	return Main(m)
}
