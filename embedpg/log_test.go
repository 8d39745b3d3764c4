//go:build linux

package embedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	// between two looks at the log is rotated at the next, whole.
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
	if !bytes.Contains(b, []byte("LOG:  filler ")) {
		t.Errorf("%s holds %d bytes and no filler line, want the log as it was before the rotation", old, len(b))
	}
	if !bytes.HasPrefix(b, []byte("20")) || !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s holds part of a line: %.80q ... %q", old, b, b[max(len(b)-80, 0):])
	}
	before := fileSize(t, log)
	exec1(t, conn, "DO $$BEGIN RAISE LOG 'first after rotation'; END$$")
	waitFor(t, "the line to reach the log", func() bool {
		b, err = os.ReadFile(log)
		return err == nil && bytes.Contains(b, []byte("first after rotation"))
	})
	if bytes.IndexByte(b, 0) >= 0 || int64(len(b)) < before {
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
	if err := c.rotateLog(context.Background()); err != nil {
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

// seqRE matches the lines TestLogRotationLosesNoLine has the server log.
var seqRE = regexp.MustCompile(`LOG:  seq (\d+)\n`)

// seqs returns the numbers of the seq lines in the first (head) or last
// 4 kB of the file at p, in order: the server writes fast, and the test
// reads only where one file ends and the next begins.
func seqs(t *testing.T, p string, head bool) []int {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	if !head {
		off = max(st.Size()-4096, 0)
	}
	b := make([]byte, min(st.Size(), 4096))
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	var ns []int
	for _, m := range seqRE.FindAllSubmatch(b, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		ns = append(ns, n)
	}
	return ns
}

// Rotation while the server logs without a pause loses no line: each line
// is in postgres.log.1 or in the new postgres.log. Emptying the log after
// copying it lost those written in between.
func TestLogRotationLosesNoLine(t *testing.T) {
	const limit = 16 << 10
	lowerLogLimits(t, limit)
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	c.stopWatch() // the test rotates, when it has looked at the last rotation
	conn := connect(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	written := make(chan error, 1)
	go func() { // one line after the other, numbered, until the test is done
		var err error
		for i := 0; err == nil && ctx.Err() == nil; i += 1000 {
			_, err = conn.Exec(ctx, fmt.Sprintf("DO $$BEGIN FOR i IN %d..%d LOOP RAISE LOG 'seq %%', i; END LOOP; END$$", i, i+999))
		}
		written <- err
	}()
	defer func() {
		cancel()
		<-written
	}()
	log, old := filepath.Join(dir, logFile), filepath.Join(dir, logFile+".1")
	for range 5 {
		waitFor(t, "the log to pass the limit", func() bool { return pastLimit(log) })
		if err := c.rotateLog(context.Background()); err != nil {
			t.Fatalf("rotateLog: %v", err)
		}
		// The next rotation would replace postgres.log.1: its last line
		// and the first of the new log are looked at first.
		var after []int
		waitFor(t, "a line in the new log", func() bool {
			_, err := os.Stat(log)
			if err == nil {
				after = seqs(t, log, true)
			}
			return len(after) > 0
		})
		before := seqs(t, old, false)
		if len(before) == 0 {
			t.Fatalf("%s holds no seq line", old)
		}
		if last := before[len(before)-1]; after[0] != last+1 {
			t.Fatalf("%s ends with line %d and %s begins with line %d: lines %d to %d were lost",
				old, last, log, after[0], last+1, after[0]-1)
		}
	}
}

// A server started by an earlier pgbus, which writes postgres.log itself
// with no logging collector, still has its log bounded by a pgbus that
// adopted it.
func TestLogOfServerWithoutCollectorBounded(t *testing.T) {
	const limit = 16 << 10
	lowerLogLimits(t, limit)
	dir := tempDataDir(t, "ep-")
	first := start(t, dir)
	stop(t, first)
	log := filepath.Join(dir, logFile)
	logf, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(first.bin("postgres"), "-D", first.pgData, "-k", first.sockDir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=", "-c", "unix_socket_permissions=0700")
	cmd.Dir, cmd.Stdout, cmd.Stderr = first.pgData, logf, logf
	cmd.SysProcAttr = first.owner.procAttr(true)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-waited })
	waitFor(t, "the server to be ready", func() bool {
		_, status, _ := readPIDFile(first.pgData)
		return status == "ready"
	})
	c := start(t, dir) // adopts it
	c.stopWatch()
	if got := queryString(t, c, "SHOW logging_collector"); got != "off" {
		t.Fatalf("logging_collector = %s, want off as an earlier pgbus started it", got)
	}
	exec1(t, connect(t, c), fmt.Sprintf("DO $$BEGIN FOR i IN 1..%d LOOP RAISE LOG 'filler %%', i; END LOOP; END$$", 2*limit/30))
	waitFor(t, "the log to pass the limit", func() bool { return pastLimit(log) })
	if err := c.rotateLog(context.Background()); err != nil {
		t.Fatalf("rotateLog: %v", err)
	}
	if size := fileSize(t, log); size > limit {
		t.Errorf("%s holds %d bytes after the rotation, want at most %d", log, size, limit)
	}
	if b, err := os.ReadFile(log + ".1"); err != nil || !bytes.Contains(b, []byte("LOG:  filler ")) || len(b) > limit {
		t.Errorf("%s.1 holds %d bytes (%v), want its newest filler lines, at most %d", log, len(b), err, limit)
	}
	stop(t, c)
}

// postgres.log.1 keeps only the newest lines of a log that grew far past
// the limit, as one does while no pgbus looks at the server: moved there
// by a running pgbus or at start-up, it held the whole log, without bound.
func TestOldLogKeepsNewestLines(t *testing.T) {
	const limit = 16 << 10
	lowerLogLimits(t, limit)
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	c.stopWatch() // the test rotates, as a look of the watch would
	log, old := filepath.Join(dir, logFile), filepath.Join(dir, logFile+".1")
	conn := connect(t, c)
	last := fillLog(t, conn, log, "running", 4*limit/30)
	if err := c.rotateLog(context.Background()); err != nil {
		t.Fatalf("rotateLog: %v", err)
	}
	waitFor(t, "the logging collector to open a new log", func() bool {
		_, err := os.Stat(log)
		return err == nil
	})
	if err := c.rotateLog(context.Background()); err != nil { // the next look
		t.Fatalf("rotateLog: %v", err)
	}
	assertNewestLines(t, old, last, limit)

	last = fillLog(t, conn, log, "before the stop", 4*limit/30)
	stop(t, c)
	waitFor(t, "the server's logging collector to end", func() bool { return len(processesUsing(c.pgData)) == 0 })
	watchInterval = time.Hour // the start alone bounds it
	stop(t, start(t, dir))    // moves the log past the limit
	assertNewestLines(t, old, last, limit)
}

// fillLog has the server log n numbered lines tagged tag, waits for the
// last to reach the log at p, and returns it.
func fillLog(t *testing.T, conn *pgx.Conn, p, tag string, n int) string {
	t.Helper()
	exec1(t, conn, fmt.Sprintf("DO $$BEGIN FOR i IN 1..%d LOOP RAISE LOG '%s %%', i; END LOOP; END$$", n, tag))
	last := fmt.Sprintf("LOG:  %s %d\n", tag, n)
	waitFor(t, "the last line to reach the log", func() bool {
		b, err := os.ReadFile(p)
		return err == nil && bytes.Contains(b, []byte(last))
	})
	return last
}

// assertNewestLines checks that the log at p holds whole lines, at most
// limit bytes of them, the line last among them.
func assertNewestLines(t *testing.T, p, last string, limit int) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit || !bytes.Contains(b, []byte(last)) {
		t.Errorf("%s holds %d bytes (line %q among them: %v), want at most %d with that line",
			p, len(b), last, bytes.Contains(b, []byte(last)), limit)
	}
	if !bytes.HasPrefix(b, []byte("20")) || !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s holds part of a line: %.80q ... %q", p, b, b[max(len(b)-80, 0):])
	}
}
