//go:build linux || darwin

package embedpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// watchInterval is how often a Cluster in use looks at the server and its
// log. A variable so tests can shorten it.
var watchInterval = 10 * time.Second

// A server that cannot be started again is tried again after a wait that
// doubles from watchInterval up to maxReviveWait: a data directory deleted
// by hand stays gone until somebody acts, and trying every few seconds only
// fills the log. The failure is logged when it starts or changes, and then
// again every reviveReminder while it lasts. Variables so tests can shorten
// them.
var (
	maxReviveWait  = 5 * time.Minute
	reviveReminder = time.Hour
)

// errClusterGone is wrapped by the error of a server that cannot be started
// again because its cluster is gone with its data directory.
var errClusterGone = errors.New("the cluster of the embedded PostgreSQL is gone")

// watch looks after the server every watchInterval until the returned
// function is called, which waits for the watch to end: it keeps
// postgres.log bounded (rotateLog), starts the server again when it is
// gone (revive) and restarts it when its socket is gone (remakeSocket).
// Every Cluster watches, whether it started the server or adopted it, also
// one started by an earlier pgbus.
func (c *Cluster) watch() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &watcher{c: c}
		for wait := watchInterval; sleepCtx(ctx, wait) == nil; {
			wait = w.look(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

// watcher is what the watch remembers from one look to the next.
type watcher struct {
	c          *Cluster
	goneBefore bool      // the server was gone at the last look
	failures   int       // failed tries in a row to start it again
	lastGone   bool      // the last failure was for want of a cluster
	loggedAt   time.Time // when a failure was last logged as an error
	// sockGone is the pid of the server whose socket was missing at the
	// last look, or 0.
	sockGone int
}

// look looks after the server once and returns how long to wait for the
// next look.
func (w *watcher) look(ctx context.Context) time.Duration {
	c := w.c
	if err := c.rotateLog(ctx); err != nil && ctx.Err() == nil {
		c.logger.Warn("rotating the embedded PostgreSQL log", "err", err)
	}
	if c.serverRuns() {
		w.goneBefore = false
		w.running()
		w.checkSocket(ctx)
		return watchInterval
	}
	w.sockGone = 0
	// Gone at two looks in a row: not a restart by somebody else
	// (pg_ctl restart), which starts the server again at once.
	if !w.goneBefore {
		w.goneBefore = true
		return watchInterval
	}
	err := c.revive(ctx)
	// Cut short only while it waits for pgbus.lock (Stop), before it
	// touched the server: any other failure is the start's own.
	if errors.Is(err, context.Canceled) {
		return watchInterval
	}
	if err != nil {
		return w.failed(err)
	}
	w.running()
	return watchInterval
}

// running notes a server that runs, after tries to start it failed.
func (w *watcher) running() {
	if w.failures > 0 {
		w.c.logger.Info("embedded PostgreSQL runs again", "failed_tries", w.failures)
	}
	w.failures = 0
}

// failed logs a failed try to start the server again, as an error when
// the failure is new or of another kind than the last, or once every
// reviveReminder, else at debug level; and returns how long to wait before
// trying again.
func (w *watcher) failed(err error) time.Duration {
	w.failures++
	wait := watchInterval
	for i := 0; i < w.failures && wait < maxReviveWait; i++ {
		wait *= 2
	}
	wait = min(wait, maxReviveWait)
	gone := errors.Is(err, errClusterGone)
	args := []any{"err", err, "failed_tries", w.failures, "next_try_in", wait}
	switch {
	case w.failures == 1 || gone != w.lastGone:
		w.c.logger.Error("embedded PostgreSQL is gone and could not be started again", args...)
	case time.Since(w.loggedAt) >= reviveReminder:
		w.c.logger.Error("embedded PostgreSQL is still gone and could not be started again", args...)
	default:
		w.c.logger.Debug("embedded PostgreSQL is still gone and could not be started again", args...)
		return wait
	}
	w.lastGone, w.loggedAt = gone, time.Now()
	return wait
}

// checkSocket restarts a server whose Unix socket was deleted, as by a
// cleaner of temporary files: the server runs on, but no new connection
// reaches it, and PostgreSQL makes its socket only when it starts. Missing
// at two looks in a row, for the same server: not a server that somebody
// else restarts.
func (w *watcher) checkSocket(ctx context.Context) {
	pid := w.c.socketGone()
	if pid == 0 || pid != w.sockGone {
		w.sockGone = pid
		return
	}
	w.sockGone = 0
	// Cut short only while it waits for pgbus.lock (Stop), before it
	// touched the server: any other failure is the restart's own.
	if err := w.c.remakeSocket(ctx); err != nil && !errors.Is(err, context.Canceled) {
		w.c.logger.Error("the Unix socket of embedded PostgreSQL was deleted and restarting the server to make it again failed",
			"socket", filepath.Join(w.c.sockDir, socketName), "err", err)
	}
}

// socketGone returns the pid of the server when it is ready for connections
// on the socket the Cluster's URL names, but that socket is gone; else 0.
func (c *Cluster) socketGone() int {
	pid, status, _ := readPIDFile(c.pgData)
	if status != "ready" || socketDirOf(c.pgData) != c.sockDir {
		return 0
	}
	if _, err := os.Lstat(filepath.Join(c.sockDir, socketName)); !errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	return pid
}

// remakeSocket restarts a server whose socket is gone, which closes the
// connections open to it: without a socket the processes using the server
// can make no new ones, and would fail once theirs break. Once begun, the
// restart runs to its end even when the watch is stopped meanwhile (Stop
// waits for it): cut short, the fast shutdown would escalate to an
// immediate one, or the new server be aborted while it starts, and the
// next start would recover from a crash. Stop then shuts down a server
// that is ready, cleanly.
func (c *Cluster) remakeSocket(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	lk, err := lock(lctx, c.path(lockFile), syscall.LOCK_EX, c.owner)
	if err != nil {
		return c.lockErr(err)
	}
	defer lk.close()
	pid := c.socketGone()
	if pid == 0 || !c.serverRuns() { // settled meanwhile by another process
		return nil
	}
	sock := filepath.Join(c.sockDir, socketName)
	c.logger.Warn("the Unix socket of embedded PostgreSQL was deleted (as by a cleaner of temporary files), so nothing could connect to it; "+
		"restarting the server, which makes it again, and closes the connections open to it", "socket", sock, "pid", pid)
	// Bounded all the same: by stopTimeout and quitTimeout, then c.timeout.
	ctx = context.WithoutCancel(ctx)
	if err := c.stopServer(ctx); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.startOn(sctx, false); err != nil {
		return err
	}
	c.logger.Info("embedded PostgreSQL restarted; its socket is back", "socket", sock)
	return nil
}

// serverRuns reports whether the postmaster of the cluster runs.
func (c *Cluster) serverRuns() bool {
	pid, _ := readPID(c.pgData)
	return processAlive(pid) && isPostgresFor(pid, c.pgData)
}

// revive starts the server again, on the socket the Cluster's URL names,
// after it died under the Cluster (killed, by the out-of-memory killer or
// by hand, or crashed), or was shut down by hand (pg_ctl stop): without a
// server every process using it would fail until restarted itself, and
// stopping those processes is how to stop the server for good. Once begun,
// the start runs to its end even when the watch is stopped meanwhile (Stop
// waits for it): cut short, it left no server, or the new one was shut down
// immediately while it started, and the next start would recover from a
// crash. Stop then shuts down a server that is ready, cleanly.
func (c *Cluster) revive(ctx context.Context) error {
	// Checked first, as the lock file may be gone with the directory.
	if clusterVersion(c.pgData) == "" {
		return c.clusterGone()
	}
	lctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	lk, err := lock(lctx, c.path(lockFile), syscall.LOCK_EX, c.owner)
	if err != nil {
		return c.lockErr(err)
	}
	defer lk.close()
	if c.serverRuns() { // another process was first
		return nil
	}
	c.logGone()
	// Bounded all the same, by c.timeout.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	return c.startOn(sctx, false)
}

// logGone says why a server that is gone is started again, and how to stop
// it for good: somebody who stopped it by hand (pg_ctl stop) meant it to
// stay stopped, but the pgbus processes using it need it.
func (c *Cluster) logGone() {
	users := strings.Trim(fmt.Sprint(lockHolders(c.path(usersFile))), "[]")
	const why = "; starting it again, as pgbus processes use it: to stop it for good, stop them " +
		"(the last to stop stops the server)"
	pid, found := readPID(c.pgData)
	if found { // left by a postmaster that did not shut down
		c.logger.Warn("embedded PostgreSQL is gone (killed, or crashed: see its log)"+why,
			"pid", pid, "used_by", users, "log", c.path(logFile))
		return
	}
	c.logger.Warn("embedded PostgreSQL was shut down (by pg_ctl stop, or a signal)"+why,
		"used_by", users, "log", c.path(logFile))
}

// clusterGone is the error for a server that is not started again because
// its cluster is gone.
func (c *Cluster) clusterGone() error {
	return newError("", errClusterGone, func(t Terms) string {
		return fmt.Sprintf("embedpg: %v (no %s): its data directory %s was deleted or moved, "+
			"and a server started there would hold none of its data, so none is: restore the directory, "+
			"or stop %s and start it again to initialize a new cluster",
			errClusterGone, filepath.Join(c.pgData, "PG_VERSION"), c.dataDir, t.Program)
	})
}
