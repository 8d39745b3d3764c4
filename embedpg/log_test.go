//go:build linux

package embedpg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lowerLogLimits makes the log rotate past limit bytes, looked at often.
func lowerLogLimits(t *testing.T, limit int64) {
	oldSize, oldEvery := maxLogSize, watchInterval
	maxLogSize, watchInterval = limit, 20*time.Millisecond
	t.Cleanup(func() { maxLogSize, watchInterval = oldSize, oldEvery })
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// postgres.log stays bounded while the server runs, not only from one
// start to the next: a server up for days writes far more than the limit.
// The process that keeps rotating it here adopted the server, as one
// adopting a server started by an earlier pgbus does.
func TestLogBoundedWhileRunning(t *testing.T) {
	const limit = 64 << 10
	lowerLogLimits(t, limit)
	dir := tempDataDir(t, "ep-")
	starter := start(t, dir)
	c := start(t, dir)
	stop(t, starter)
	conn := connect(t, c)
	log, old := filepath.Join(dir, logFile), filepath.Join(dir, logFile+".1")
	line := strings.Repeat("x", 1000)
	for i := range 4 * limit / len(line) {
		exec1(t, conn, fmt.Sprintf("DO $$BEGIN RAISE LOG 'filler %d %s'; END$$", i, line))
	}
	// Rotated, and at most as long as the limit: what the server wrote
	// between two looks at the log is rotated at the next.
	waitFor(t, "the log to be rotated", func() bool {
		st, err := os.Stat(log)
		_, oerr := os.Stat(old)
		return err == nil && oerr == nil && st.Size() <= limit
	})
	c.stopWatch() // no rotation from here on, for the checks below

	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit || !bytes.Contains(b, []byte("LOG:  filler ")) {
		t.Errorf("%s holds %d bytes, want some of the log, at most %d", old, len(b), limit)
	}
	if !bytes.HasPrefix(b, []byte("20")) || !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s holds part of a line: %.80q ... %q", old, b, b[max(len(b)-80, 0):])
	}
	before := fileSize(t, log)
	exec1(t, conn, "DO $$BEGIN RAISE LOG 'first after rotation'; END$$")
	if b, err = os.ReadFile(log); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("first after rotation")) || bytes.IndexByte(b, 0) >= 0 || int64(len(b)) < before {
		t.Errorf("the server writes %s where it stopped before the rotation (%d bytes before the line, NULs: %v), want at its new end",
			log, before, bytes.IndexByte(b, 0) >= 0)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), logFile) && e.Name() != logFile && e.Name() != logFile+".1" {
			t.Errorf("unexpected log file %s", e.Name())
		}
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// A postgres.log that is a symbolic link, which the server's user can plant
// in the directory it owns, is neither followed to its target by rotation
// nor handed to a starting server: as root that would read, empty or
// append to any file.
func TestLogLinkNotFollowed(t *testing.T) {
	const limit = 1 << 10
	lowerLogLimits(t, limit)
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	c.stopWatch()
	victim := filepath.Join(tempDataDir(t, "ep-victim-"), "victim")
	content := bytes.Repeat([]byte("precious line\n"), 4*limit/14)
	if err := os.WriteFile(victim, content, 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, logFile)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, log); err != nil {
		t.Fatal(err)
	}
	if err := c.rotateLog(); err != nil {
		t.Fatalf("rotateLog: %v", err)
	}
	if b, _ := os.ReadFile(victim); !bytes.Equal(b, content) {
		t.Errorf("rotation changed the target of the link: %d bytes, want %d", len(b), len(content))
	}
	if b, err := os.ReadFile(log + ".1"); err == nil && bytes.Contains(b, []byte("precious")) {
		t.Errorf("rotation copied the target of the link to %s", log+".1")
	}
	stop(t, c)

	// A link to a file under the limit, which start-up does not move aside.
	small := []byte("precious line\n")
	if err := os.WriteFile(victim, small, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), opts(t, dir))
	if err == nil {
		_ = c.Stop(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Start with a linked postgres.log: %v, want an error saying it is a link", err)
	}
	if b, _ := os.ReadFile(victim); !bytes.Equal(b, small) {
		t.Errorf("the start wrote to the target of the link: %q", b)
	}
}
