//go:build linux

package embedpg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A data directory too long for a socket beside it has its socket under the
// temporary directory; a second process whose TMPDIR differs (another shell,
// a service manager) adopts the running server all the same.
func TestAdoptLongDataDirUnderAnotherTMPDIR(t *testing.T) {
	dir := tempDataDir(t, "ep-"+strings.Repeat("x", 100)+"-")
	var tmps [2]string
	for i := range tmps {
		tmps[i] = tempDataDir(t, "ep-tmp-")
		if err := os.Chmod(tmps[i], 0o755); err != nil { // reachable by the server user
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmps[0])
	c1 := start(t, dir)
	pid := serverPID(t, dir)

	t.Setenv("TMPDIR", tmps[1])
	o := opts(t, dir)
	o.StartTimeout = defaultStartTimeout / 4
	c2, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start under another TMPDIR: %v", err)
	}
	t.Cleanup(func() { _ = c2.Stop(context.Background()) })
	if got := serverPID(t, dir); got != pid {
		t.Errorf("server pid %d, want adopted %d", got, pid)
	}
	if c2.URL() != c1.URL() {
		t.Errorf("URL %q, want the running server's %q", c2.URL(), c1.URL())
	}
	if got := queryString(t, c2, "SELECT current_database()"); got != "pgbus" {
		t.Errorf("current_database() = %q", got)
	}
	if _, err := os.Stat(filepath.Join(tmps[1], "pgbus-"+shortHash(dir))); err == nil {
		t.Errorf("an unused socket directory was left under %s", tmps[1])
	}
	stop(t, c1)
	if !processAlive(pid) {
		t.Fatal("first Stop stopped the server under the second cluster")
	}
	stop(t, c2)
	assertStopped(t, dir, pid)
	cfg, err := pgx.ParseConfig(c1.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg.Host); err == nil {
		t.Errorf("socket directory %s left behind", cfg.Host)
	}
}

// A running server that takes no connections, here because its socket was
// removed, is named with how to stop it, the next step once the log shows
// nothing to wait for.
func TestAdoptUnreachableServerSaysHowToStopIt(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	start(t, dir)
	pid := serverPID(t, dir)
	if err := os.Remove(filepath.Join(dir, socketName)); err != nil {
		t.Fatal(err)
	}
	o := opts(t, dir)
	o.StartTimeout = time.Second
	c, err := Start(context.Background(), o)
	if err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("Start adopted a server without a socket")
	}
	if want := fmt.Sprintf("kill -INT %d", pid); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
