//go:build linux || darwin

package embedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// maxLogSize bounds postgres.log: past it, the log is moved to
// postgres.log.1, at start-up and while the server runs; and postgres.log.1,
// which keeps the newest maxLogSize bytes of a log moved there longer, as
// one that grew while no pgbus looked at it. A variable so tests can lower
// it.
var maxLogSize int64 = 10 << 20

// openLog opens postgres.log for a server about to start, moving a log past
// maxLogSize to postgres.log.1 first. The server writes there what it logs
// before its logging collector runs, which then appends to the same file.
// The file is opened for appending: the server inherits that, so a log
// emptied by copyTruncate is written from its new end rather than at the
// old offset, which would leave a hole.
func (c *Cluster) openLog() (*os.File, error) {
	p := c.path(logFile)
	if st, err := os.Stat(p); err == nil && st.Size() > maxLogSize && os.Rename(p, p+".1") == nil {
		// No server writes the moved log: it starts after its last
		// process ended (clearStale).
		if err := c.cutOld(p); err != nil {
			c.logger.Warn("bounding the old embedded PostgreSQL log", "err", err)
		}
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

// rotateLog moves postgres.log to postgres.log.1 once it is past
// maxLogSize. The server writes its log through its logging collector
// (spawn), which opens a new postgres.log when asked: lines written until
// then go to the moved file, so none is lost and the server's logging
// never waits for the rotation. A server started by an earlier pgbus
// writes the file itself, so its log is rotated as copyTruncate says. The
// rotation happens under pgbus.lock, skipped while another process holds
// it (it is starting or stopping the server, or rotating the log itself).
// A log moved to postgres.log.1 longer than maxLogSize is cut to its
// newest lines at the next look (trimOld).
func (c *Cluster) rotateLog(ctx context.Context) error {
	p := c.path(logFile)
	// A server not ready takes no connection to ask for a new log; it
	// logs little meanwhile (its progress every 10 seconds, the refused
	// connections of clients, which back off).
	_, status, _ := readPIDFile(c.pgData)
	rotate := status == "ready" && pastLimit(p)
	if !rotate && !pastLimit(p+".1") {
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
	// Before rotating: the log moved at the last rotation, not this one,
	// which the collector may still be writing the last lines to. A
	// failure to cut it does not keep postgres.log from being bounded.
	terr := c.trimOld(p)
	if !rotate {
		return terr
	}
	collected, err := c.rotateCollected(ctx, p)
	if err == nil && !collected {
		err = c.copyTruncate(p)
	}
	return errors.Join(terr, err)
}

// trimOld cuts p.1 to its newest lines (cutOld) once the logging
// collector writes p again: it opens p anew when asked to rotate, and then
// writes no more to p.1. A log that grew while no pgbus looked at it is
// moved there whole. The caller holds pgbus.lock.
func (c *Cluster) trimOld(p string) error {
	if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() || !pastLimit(p+".1") {
		return nil
	}
	return c.cutOld(p)
}

// cutOld cuts p.1 to its newest maxLogSize bytes, from a line start. No
// server may write to it any more.
func (c *Cluster) cutOld(p string) error {
	f, err := os.OpenFile(p+".1", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil // gone or a link: no old log to bound
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= maxLogSize {
		return err
	}
	tail, err := newestLines(f, st.Size(), maxLogSize)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p+".1", err)
	}
	if err := c.keepOld(p, tail); err != nil {
		return fmt.Errorf("cutting %s to its newest lines: %w", p+".1", err)
	}
	return nil
}

// pastLimit reports whether the log at p is a regular file past
// maxLogSize.
func pastLimit(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular() && st.Size() > maxLogSize
}

// rotateCollected moves the log at p to p.1 and asks the server's logging
// collector to open a new one, and reports whether the server has a
// logging collector; the caller holds pgbus.lock.
func (c *Cluster) rotateCollected(ctx context.Context, p string) (collected bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return false, fmt.Errorf("connecting to the server to rotate its log: %w", err)
	}
	defer conn.Close(context.Background())
	var on string
	if err := conn.QueryRow(ctx, "SHOW logging_collector").Scan(&on); err != nil || on != "on" {
		return false, err
	}
	if !pastLimit(p) { // rotated meanwhile by another process
		return true, nil
	}
	if err := os.Rename(p, p+".1"); err != nil {
		return true, fmt.Errorf("moving %s: %w", p, err)
	}
	// Once the log is moved the rotation is finished even when the watch
	// stops meanwhile: named back, the log would be past its limit again
	// and the lines rotated before lost.
	finish, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelFinish()
	var ok bool
	err = conn.QueryRow(finish, "SELECT pg_rotate_logfile()").Scan(&ok)
	if err == nil && !ok {
		err = errors.New("the server's logging collector does not run")
	}
	if err != nil {
		// The collector writes on to the moved file: named back, it is
		// the log again, to be rotated at the next look.
		_ = os.Rename(p+".1", p)
		return true, fmt.Errorf("asking the server to open a new %s: %w", p, err)
	}
	return true, nil
}

// copyTruncate copies the newest maxLogSize bytes of the log at p, from a
// line start, to p.1 and empties it: the server that writes the file
// itself keeps it open, so it cannot be renamed under it; it appends, so
// emptying the file makes it write from the start again. A line it writes
// between the copy and the emptying is lost. The caller holds pgbus.lock.
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
