//go:build linux || darwin

package embedpg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// maxLogSize bounds postgres.log: past it, the log is moved to
// postgres.log.1 (at start-up) or its newest part copied there and the log
// emptied (while the server runs). A variable so tests can lower it.
var maxLogSize int64 = 10 << 20

// openLog opens postgres.log for a server about to start, moving a log past
// maxLogSize to postgres.log.1 first. The file is opened for appending: the
// server inherits that, so a log emptied by rotateLog is written from its
// new end rather than at the old offset, which would leave a hole.
func (c *Cluster) openLog() (*os.File, error) {
	p := c.path(logFile)
	if st, err := os.Stat(p); err == nil && st.Size() > maxLogSize {
		_ = os.Rename(p, p+".1")
	}
	// Not following a link: as root, we would open for the server any file
	// a link planted by its user (who owns the directory) names.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("embedpg: the server log %s is a symbolic link, which pgbus does not follow; remove it", p)
	}
	if err != nil {
		return nil, fmt.Errorf("embedpg: opening server log: %w; check the permissions of %s and the space on its disk", err, c.dataDir)
	}
	if err := c.owner.chown(p); err != nil {
		f.Close()
		return nil, fmt.Errorf("embedpg: handing %s to user %s: %w", p, c.owner, err)
	}
	return f, nil
}

// rotateLog copies the newest maxLogSize bytes of postgres.log, from a line
// start, to postgres.log.1 and empties postgres.log, once it is past
// maxLogSize. The running server keeps the log open, so the file cannot be
// renamed under it; it appends, so emptying the file makes it write from
// the start again. A line the server writes between the copy and the
// emptying is lost. The rotation happens under pgbus.lock, skipped while
// another process holds it (it is starting or stopping the server, or
// rotating the log itself).
func (c *Cluster) rotateLog() error {
	p := c.path(logFile)
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() || st.Size() <= maxLogSize {
		return nil
	}
	fd, err := openLock(c.path(lockFile), c.owner)
	if err != nil {
		return err
	}
	defer fd.close()
	if ok, err := fd.try(syscall.LOCK_EX); !ok {
		return err
	}
	return c.copyTruncate(p)
}

// copyTruncate does rotateLog's work; the caller holds pgbus.lock.
func (c *Cluster) copyTruncate(p string) error {
	// Not following a link: as root, the file would be another one than
	// the server's log, which its user (who owns the directory) chose.
	f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil // gone or a link: no log of the server to bound
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= maxLogSize { // rotated meanwhile by another process
		return err
	}
	tail, err := newestLines(f, st.Size(), maxLogSize)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	// The log is emptied even when its copy fails: on a full disk the
	// space it frees matters more than its old lines.
	kept := c.keepOld(p, tail)
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("emptying %s: %w", p, err)
	}
	if kept != nil {
		return fmt.Errorf("keeping the old log lines (emptied %s all the same): %w", p, kept)
	}
	return nil
}

// keepOld writes old lines of the log at p to p.1, whole or not at all.
func (c *Cluster) keepOld(p string, lines []byte) error {
	tmp := p + ".1.tmp"
	_ = os.Remove(tmp) // left by a rotation cut short, or a link planted there
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(lines)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.owner.chown(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, p+".1")
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// newestLines returns the last at most limit bytes of the first size bytes of
// f, starting after a newline unless the file is read from its start.
func newestLines(f *os.File, size, limit int64) ([]byte, error) {
	off := max(size-limit, 0)
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b, nil
}

// logTail returns the last lines of postgres.log for error messages.
func (c *Cluster) logTail() string {
	f, err := os.OpenFile(c.path(logFile), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	b, err := newestLines(f, st.Size(), 4096)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(b, 15)
}
