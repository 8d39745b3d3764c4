// Package exectest writes files that tests then run as programs.
//
// A file a test binary writes with os.WriteFile is open for writing in that
// process while it is written; a child the binary forks meanwhile for a
// parallel test inherits the descriptor until it execs, and running the
// file then fails with "text file busy" (ETXTBSY). Writing it from a child
// process instead leaves no descriptor of it in the test binary to inherit.
package exectest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// WriteFile writes content to path with permissions perm, from a child
// process, failing the test when it cannot.
func WriteFile(t testing.TB, path, content string, perm os.FileMode) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `cat > "$1" && chmod "$2" "$1"`, "sh", path, fmt.Sprintf("%o", perm.Perm()))
	cmd.Stdin = strings.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write %s: %v\n%s", path, err, out)
	}
}
