//go:build linux

package embedpg

import (
	"context"
	"path/filepath"
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
