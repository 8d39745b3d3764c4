//go:build linux

package embedpg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/exectest"
)

// A data directory given by mistake, one that already holds files other than
// an embedded cluster's, is refused before anything in it changes: as root
// pgbus would otherwise hand it, and all it holds, to the server's user.
func TestForeignDataDirIsRefused(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("not pgbus's"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(notes)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), opts(t, dir))
	if err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("Start succeeded on a directory holding someone else's files")
	}
	checkGoTerms(t, err, "DataDir")
	for _, want := range []string{dir, "notes.txt", "choose an empty or new directory with Options.DataDir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	after, err := os.Stat(notes)
	if err != nil {
		t.Fatal(err)
	}
	if b, a := before.Sys().(*syscall.Stat_t), after.Sys().(*syscall.Stat_t); a.Uid != b.Uid || a.Gid != b.Gid {
		t.Errorf("notes.txt went from owner %d:%d to %d:%d", b.Uid, b.Gid, a.Uid, a.Gid)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the refused directory holds %d entries (%v), want notes.txt alone", len(entries), err)
	}

	// A file where the directory should be is named as such, not as a lock
	// another pgbus holds.
	_, err = Start(context.Background(), opts(t, notes))
	if err == nil || !strings.Contains(err.Error(), "not a directory") || strings.Contains(err.Error(), "another pgbus") {
		t.Fatalf("Start on a file: %v; want an error saying it is not a directory", err)
	}
	t.Logf("error: %v", err)

	// A new mount point holds lost+found only, and is used.
	if err := os.Remove(notes); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	c = start(t, dir)
	pid := serverPID(t, dir)
	stop(t, c)
	assertStopped(t, dir, pid)
	c = start(t, dir) // and is a cluster's now
	stop(t, c)
}

// A cluster whose PG_VERSION cannot be read for another reason than its
// absence (here a symbolic link looping on itself; an I/O or permission
// error alike) is not taken for an interrupted initdb: nothing in it is
// removed, and the error says so.
func TestUnreadableClusterIsKept(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	pgdata := filepath.Join(dir, "pgdata")
	if err := os.MkdirAll(pgdata, 0o700); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(pgdata, "base")
	if err := os.WriteFile(canary, []byte("the cluster's data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("PG_VERSION", filepath.Join(pgdata, "PG_VERSION")); err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), opts(t, dir))
	if err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("Start succeeded on a cluster whose PG_VERSION it cannot read")
	}
	if !strings.Contains(err.Error(), "nothing was removed") || !strings.Contains(err.Error(), pgdata) {
		t.Errorf("error %q; want it to name the cluster and say nothing was removed", err)
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "the cluster's data" {
		t.Fatalf("the cluster's files after the refused start: %q, %v; want them kept", b, err)
	}
}

// A lock file that is a symbolic link, which the server's user can plant in
// the directory it owns, is not followed: as root, opening it would create
// the file it names anywhere (an empty /etc/nologin locks users out).
func TestLockLinkNotFollowed(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	target := filepath.Join(tempDataDir(t, "ep-target-"), "created")
	if err := os.Symlink(target, filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), opts(t, dir))
	if err == nil {
		_ = c.Stop(context.Background())
		t.Error("Start followed a linked pgbus.lock")
	} else if !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %q; want it to say the lock file is a link", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("opening the linked pgbus.lock created %s", target)
	}
}

// startErrEnv makes the test binary only print the error of a Start on the
// data directory it names (see TestMain).
const startErrEnv = "EMBEDPG_TEST_START_ERR_DATA_DIR"

// A data directory of another user says whose it is and how to use it,
// rather than only that it could not be read.
func TestDataDirOfAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root runs a process as another user")
	}
	root := tempDataDir(t, "ep-")
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "data")
	if err := os.MkdirAll(filepath.Join(dir, "pgdata"), 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exectest.RunAsNobody(t, []string{startErrEnv + "=" + dir}, "-test.run=^$")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("error: %s", out)
	for _, want := range []string{"belongs to user root", "runs as user nobody", "run this program as root,", "Options.DataDir"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error %q does not say %q", out, want)
		}
	}
	for _, w := range frontWords {
		if strings.Contains(string(out), w) {
			t.Errorf("error %q says %q, words of a command line", out, w)
		}
	}
}

// A BinDir given without a server in it is refused before anything is
// written, naming the field and how to find the right one: Start went on to
// make the data directory and failed as initdb would not run, advising to
// remove that directory.
func TestStartRefusesBinDirWithoutServer(t *testing.T) {
	t.Parallel()
	dataDir := tempDataDir(t, "ep-")
	bin := t.TempDir()
	exectest.WriteFile(t, filepath.Join(bin, "initdb"), "#!/bin/sh\n", 0o755) // initdb alone, no postgres
	c, err := Start(t.Context(), Options{DataDir: dataDir, BinDir: bin})
	if err == nil {
		_ = c.Stop(t.Context())
	}
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "Options.BinDir "+bin) || !strings.Contains(err.Error(), "pg_config --bindir") {
		t.Fatalf("Start = %v; want ErrNoBinaries naming Options.BinDir and pg_config --bindir", err)
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) > 0 {
		t.Fatalf("the data directory was written to: %v (%v)", entries, err)
	}
}

// A Start whose time runs out while initdb runs says so and that starting
// again is all it takes, instead of advising to remove the data directory;
// and the next Start does make the cluster.
func TestInitdbCutOffSaysStartAgain(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	o := opts(t, dir)
	o.StartTimeout = time.Nanosecond
	c, err := Start(context.Background(), o)
	if err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("Start within a nanosecond made a cluster")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Start again, with a longer Options.StartTimeout") || strings.Contains(err.Error(), "remove the directory") {
		t.Fatalf("Start = %v; want DeadlineExceeded, saying to start again with a longer StartTimeout, not to remove the directory", err)
	}
	start(t, dir)
}

// Data directories Start cannot use say so in a Go program's terms, naming
// Options.DataDir: a file, one under a file, and one whose cluster's
// version cannot be read.
func TestUnusableDataDirNamesOptionsField(t *testing.T) {
	t.Parallel()
	root := tempDataDir(t, "ep-")
	if err := os.Chmod(root, 0o755); err != nil { // for the server's user under root
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A PG_VERSION that cannot be read: a link to itself.
	loop := filepath.Join(root, "loop")
	if err := os.MkdirAll(filepath.Join(loop, "pgdata"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("PG_VERSION", filepath.Join(loop, "pgdata", "PG_VERSION")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir, says string }{
		{"a file", file, "is not a directory; choose another with Options.DataDir"},
		// The embedded server may not be what was meant: its error names
		// the running server's way too.
		{"under a file", filepath.Join(file, "data", "dir"), "choose a writable directory with Options.DataDir, or pass the URL of a running PostgreSQL server"},
		{"version unreadable", loop, "cannot tell whether"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Start(context.Background(), opts(t, tc.dir))
			if err == nil {
				_ = c.Stop(context.Background())
				t.Fatalf("Start succeeded on %s", tc.dir)
			}
			checkGoTerms(t, err, "DataDir")
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}
