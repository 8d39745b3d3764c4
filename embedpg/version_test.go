//go:build linux

package embedpg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/exectest"
)

// A machine upgraded to a new PostgreSQL major version keeps the old one's
// server beside it until the old cluster is dealt with: the existing
// cluster starts with the binaries of its own version, wherever the new
// ones come first in the search.
func TestExistingClusterUsesBinariesOfItsVersion(t *testing.T) {
	real, err := FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
	stop(t, c)
	b, err := os.ReadFile(filepath.Join(dir, "pgdata", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	major := strings.TrimSpace(string(b))

	// Under the search's root: a newer major version, which cannot run this
	// cluster (its initdb and postgres only say their version), and the
	// installed one.
	root := tempDataDir(t, "ep-bin-")
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(root, "999", "bin")
	fakeServerVersion(t, newer, "999.1")
	installed := filepath.Join(root, major, "bin")
	if err := os.MkdirAll(installed, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(installed, name)); err != nil {
			t.Fatal(err)
		}
	}
	saved := defaultSearch
	t.Cleanup(func() { defaultSearch = saved })
	defaultSearch = binSearch{pgConfig: noPgConfig, globs: []string{filepath.Join(root, "*", "bin")}}
	t.Setenv("PATH", newer) // first, and no other server on it

	c = start(t, dir)
	if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
		t.Errorf("row = %q, want kept", got)
	}
	pid := serverPID(t, dir)
	stop(t, c)
	assertStopped(t, dir, pid)

	// Without a server of the cluster's version, the error names the
	// version the cluster needs and the ones found.
	if err := os.RemoveAll(installed); err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), opts(t, dir))
	if err == nil {
		t.Fatal("Start succeeded without a server of the cluster's version")
	}
	t.Logf("error: %v", err)
	for _, want := range []string{"made by PostgreSQL " + major, "999.1", "PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// fakeServerVersion makes dir hold an initdb and a postgres that only say
// they are PostgreSQL version and fail otherwise.
func fakeServerVersion(t *testing.T, dir, version string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nif [ \"$1\" = -V ] || [ \"$1\" = --version ]; then echo \"postgres (PostgreSQL) " + version + "\"; exit 0; fi\necho \"FATAL:  not a real server\" >&2\nexit 1\n"
	for _, name := range []string{"initdb", "postgres"} {
		exectest.WriteFile(t, filepath.Join(dir, name), script, 0o755)
	}
}
