package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// MainWithBinary is Main for tests that run the pgbus command as a person
// or a script would: it first builds the command with the race detector into
// a temporary directory and sets *binary to its path, and removes it once
// the tests have run. A failed build fails the run before any test.
func MainWithBinary(m *testing.M, binary *string) int {
	return MainWithBinaries(m, binary, nil)
}

// MainWithBinaries is MainWithBinary that also builds the command without
// the race detector, at *quick, when quick is not nil. A binary built with
// -race takes several times as long to start, and the race detector finds
// nothing in a command that runs no goroutines of its own: tests run the
// many short commands that only read or write once with the quick one, and
// the workers, servers and embedded PostgreSQL with the race one. The two
// builds run side by side.
func MainWithBinaries(m *testing.M, race, quick *string) int {
	dir, err := os.MkdirTemp("", "pgbus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	builds := []build{{path: race, dir: filepath.Join(dir, "race"), flags: []string{"-race"}}}
	if quick != nil {
		builds = append(builds, build{path: quick, dir: filepath.Join(dir, "quick")})
	}
	var wg sync.WaitGroup
	for i := range builds {
		wg.Add(1)
		go func() { defer wg.Done(); builds[i].run() }()
	}
	wg.Wait()
	for _, b := range builds {
		if b.err != nil {
			fmt.Fprintf(os.Stderr, "build pgbus %v: %v\n%s", b.flags, b.err, b.out.Bytes())
			return 1
		}
	}
	return Main(m)
}

// build is one go build of the pgbus command into dir, named pgbus there
// so that a test may put dir on PATH.
type build struct {
	path  *string
	dir   string
	flags []string
	out   bytes.Buffer
	err   error
}

func (b *build) run() {
	if b.err = os.Mkdir(b.dir, 0o755); b.err != nil {
		return
	}
	*b.path = filepath.Join(b.dir, "pgbus")
	args := append(append([]string{"build"}, b.flags...), "-o", *b.path, "github.com/pgbus/pgbus")
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = &b.out, &b.out
	b.err = cmd.Run()
}
