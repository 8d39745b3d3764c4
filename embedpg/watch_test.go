//go:build linux

package embedpg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server that dies under a process using it (the out-of-memory killer, a
// kill by hand) is started again by that process, with its data and on the
// socket its URL names: a pgbus serve up for days does not fail from then
// on until someone restarts it.
func TestServerKilledUnderClusterIsStartedAgain(t *testing.T) {
	old := watchInterval
	watchInterval = 20 * time.Millisecond
	t.Cleanup(func() { watchInterval = old })
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
	pid := serverPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var newPID int
	waitFor(t, "the server to be started again", func() bool {
		newPID, _ = readPID(filepath.Join(dir, "pgdata"))
		return newPID != pid && processAlive(newPID) && c.ping(context.Background()) == nil
	})
	if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
		t.Errorf("row after the server was started again = %q, want kept", got)
	}
	stop(t, c)
	assertStopped(t, dir, newPID)
}

// A server gone with its whole data directory (removed by mistake) is not
// started again on a new empty cluster, and the error says why.
func TestGoneDataDirNotRecreated(t *testing.T) {
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	c.stopWatch()
	pid := serverPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "killed postmaster to go", func() bool { return !processAlive(pid) })
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(moved) })
	err := c.revive(context.Background())
	if err == nil || !strings.Contains(err.Error(), "so is its cluster") {
		t.Errorf("revive: %v, want an error saying the cluster is gone", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("revive made %s again", dir)
	}
}
