//go:build linux || darwin

package embedpg

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// watchInterval is how often a Cluster in use looks at the server and its
// log. A variable so tests can shorten it.
var watchInterval = 10 * time.Second

// watch looks after the server every watchInterval until the returned
// function is called, which waits for the watch to end: it keeps
// postgres.log bounded (rotateLog) and starts the server again when it is
// gone (revive). Every Cluster watches, whether it started the server or
// adopted it, also one started by an earlier pgbus.
func (c *Cluster) watch() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		goneBefore := false
		for sleepCtx(ctx, watchInterval) == nil {
			if err := c.rotateLog(); err != nil {
				c.logger.Warn("rotating the embedded PostgreSQL log", "err", err)
			}
			gone := !c.serverRuns()
			// Gone at two looks in a row: not a restart by somebody else
			// (pg_ctl restart), which starts the server again at once.
			if gone && goneBefore {
				if err := c.revive(ctx); err != nil && ctx.Err() == nil {
					c.logger.Error("embedded PostgreSQL is gone and could not be started again; trying again soon", "err", err)
				}
			}
			goneBefore = gone
		}
	}()
	return func() { cancel(); <-done }
}

// serverRuns reports whether the postmaster of the cluster runs.
func (c *Cluster) serverRuns() bool {
	pid, _ := readPID(c.pgData)
	return processAlive(pid) && isPostgresFor(pid, c.pgData)
}

// revive starts the server again, on the socket the Cluster's URL names,
// after it died under the Cluster (killed, by the out-of-memory killer or
// by hand, or crashed): while a Cluster holds its share nobody stops the
// server on purpose, and without a server every process using it would fail
// until restarted itself.
func (c *Cluster) revive(ctx context.Context) error {
	// Checked first, as the lock file may be gone with the directory.
	if clusterVersion(c.pgData) == "" {
		return fmt.Errorf("embedpg: the server in %s is gone and so is its cluster (no PG_VERSION); "+
			"nothing was started: restore the directory, or stop pgbus and start it again for a new empty cluster", c.pgData)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	lk, err := lock(ctx, c.path(lockFile), syscall.LOCK_EX, c.owner)
	if err != nil {
		return c.lockErr(err)
	}
	defer lk.close()
	if c.serverRuns() { // another process was first
		return nil
	}
	pid, _ := readPID(c.pgData)
	c.logger.Warn("embedded PostgreSQL is gone; starting it again", "pid", pid, "log", c.path(logFile))
	return c.startOn(ctx)
}
