//go:build linux || darwin

package embedpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	stopTimeout = 30 * time.Second // fast shutdown, before escalating
	quitTimeout = 10 * time.Second // immediate shutdown, before giving up
)

// ensureRunning adopts or starts the server and creates the database. The
// caller holds pgbus.lock.
func (c *Cluster) ensureRunning(ctx context.Context) error {
	if err := c.adoptOrStart(ctx); err != nil {
		return err
	}
	return c.createDatabase(ctx)
}

func (c *Cluster) adoptOrStart(ctx context.Context) error {
	for {
		pid, found := readPID(c.pgData)
		if !found || !processAlive(pid) {
			return c.startServer(ctx)
		}
		ours := isPostgresFor(pid, c.pgData)
		if d := socketDirOf(c.pgData); ours && d != "" {
			// The server listens where its starter put the socket, which
			// for a long data directory depends on that process's TMPDIR.
			c.sockDir = d
		}
		err := errors.New("still starting up")
		if !ours || !starting(c.pgData) {
			err = c.ping(ctx)
		}
		if err == nil {
			c.logger.Info("using running embedded PostgreSQL", "pid", pid)
			return nil
		}
		if !ours { // the pid was reused after a crash
			return c.startServer(ctx)
		}
		// A server of this cluster that is starting up or shutting down
		// (outside our locks): look again until it settles.
		if serr := sleepCtx(ctx, 4*pollInterval); serr != nil {
			if starting(c.pgData) {
				return c.stillStarting(pid, serr)
			}
			return newError("", serr, func(t Terms) string {
				return fmt.Sprintf("embedpg: PostgreSQL (pid %d) runs on %s but does not accept connections (%v): %v; see %s, "+
					"and if it still runs, stop it (kill -INT %d, a fast shutdown) and start %s again",
					pid, c.pgData, err, serr, c.path(logFile), pid, t.Program)
			})
		}
	}
}

func (c *Cluster) startServer(ctx context.Context) error {
	c.sockDir = socketDir(c.dataDir)
	return c.startOn(ctx, true)
}

// startOn starts the server with its socket in c.sockDir, creating the
// cluster first when there is none and create is set. A server started
// again under a running pgbus is not created: its cluster, deleted after
// the caller looked, would come back empty.
func (c *Cluster) startOn(ctx context.Context, create bool) error {
	if err := c.clearStale(ctx); err != nil {
		return err
	}
	if err := c.prepareSocketDir(); err != nil {
		return err
	}
	if !create && clusterVersion(c.pgData) == "" {
		return c.clusterGone()
	}
	if err := c.initdb(ctx); err != nil {
		return err
	}
	if err := c.checkVersion(); err != nil {
		return err
	}
	if err := c.owner.chownTree(c.pgData); err != nil {
		return fmt.Errorf("embedpg: handing %s to user %s: %w", c.pgData, c.owner, err)
	}
	return c.spawn(ctx)
}

// clearStale removes what a dead server left behind, once none of its
// processes remain. postgres itself refuses to start while postmaster.pid
// names any live process (a pid reused after a crash), and removing the file
// while old backends still run would let two servers write the same files.
func (c *Cluster) clearStale(ctx context.Context) error {
	for {
		pids := processesUsing(c.pgData)
		if len(pids) == 0 {
			break
		}
		if err := sleepCtx(ctx, 4*pollInterval); err != nil {
			return fmt.Errorf("embedpg: PostgreSQL processes %v still use %s but no server accepts connections: %w; stop them (kill %v) and retry",
				pids, c.pgData, err, strings.Trim(fmt.Sprint(pids), "[]"))
		}
	}
	if pid, found := readPID(c.pgData); found {
		c.logger.Info("removing stale postmaster.pid left by a server that is gone", "pid", pid)
	}
	for _, p := range []string{
		filepath.Join(c.pgData, "postmaster.pid"),
		filepath.Join(c.sockDir, socketName),
		filepath.Join(c.sockDir, socketName+".lock"),
	} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("embedpg: removing stale %s: %w", p, err)
		}
	}
	return nil
}

// initdb creates the cluster unless pgdata/PG_VERSION shows it exists.
// initdb writes PG_VERSION early, so it runs in a side directory that is
// renamed into place only once initdb succeeded: a pgdata is always complete.
func (c *Cluster) initdb(ctx context.Context) error {
	switch _, err := os.Stat(filepath.Join(c.pgData, "PG_VERSION")); {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		// Only a cluster without PG_VERSION is an interrupted initdb's.
		return dataDirError(err, func(dataDir string) string {
			return fmt.Sprintf("embedpg: cannot tell whether %s holds a cluster (%v); nothing was removed: repair the directory (its permissions, the disk) or set %s",
				c.pgData, err, dataDir)
		})
	}
	tmp := c.pgData + ".initdb"
	for _, d := range []string{c.pgData, tmp} { // leftovers of an interrupted run
		if err := os.RemoveAll(d); err != nil {
			return dataDirError(err, func(dataDir string) string {
				return fmt.Sprintf("embedpg: removing incomplete cluster: %v; remove it yourself or set %s", err, dataDir)
			})
		}
	}
	c.logger.Info("creating PostgreSQL cluster", "dir", c.pgData)
	cmd := exec.CommandContext(ctx, c.bin("initdb"), "-D", tmp, "-U", superuser,
		"--auth=trust", "-E", "UTF8", "--no-locale")
	cmd.Dir = c.dataDir // the server user may not enter our working directory
	cmd.Env = append(serverEnv(), c.env...)
	cmd.SysProcAttr = c.owner.procAttr(false)
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			// Cut off, not failed: what it wrote is in the side
			// directory, which the next Start removes.
			return fmt.Errorf("embedpg: initdb in %s was cut off (%w) before it finished: Start again, with a longer Options.StartTimeout (now %s) if it ran out; nothing needs removing",
				c.pgData, ctx.Err(), c.timeout)
		}
		full := bytes.Contains(out, []byte("No space left on device"))
		return dataDirError(err, func(dataDir string) string {
			next := "remove the directory or set " + dataDir
			if full {
				next = "free space on the disk of " + c.dataDir + " (a new cluster takes about 40 MB) or set " + dataDir + " to a directory on another disk"
			}
			return fmt.Sprintf("embedpg: initdb in %s failed: %v: %s; %s", c.pgData, err, lastLines(out, 10), next)
		})
	}
	if err := os.Rename(tmp, c.pgData); err != nil {
		return fmt.Errorf("embedpg: moving the new cluster into place: %w", err)
	}
	return syncDir(c.dataDir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// checkVersion explains a cluster made by another major version, instead of
// leaving the user with the server's terse refusal in the log.
func (c *Cluster) checkVersion() error {
	want := clusterVersion(c.pgData)
	if want == "" {
		return fmt.Errorf("embedpg: reading the cluster's version in %s: no PG_VERSION; move the directory away to start afresh",
			c.pgData)
	}
	have, err := serverVersion(c.binDir)
	if err != nil || majorOf(have) == want {
		return nil // the same version, or let the server report what is wrong
	}
	var found []string
	for _, d := range binDirs(currentSearch()) {
		if v, err := serverVersion(d); err == nil {
			found = append(found, "PostgreSQL "+v+" in "+d)
		}
	}
	if len(found) == 0 {
		found = append(found, "PostgreSQL "+have+" in "+c.binDir)
	}
	return fmt.Errorf("embedpg: the cluster in %s was made by PostgreSQL %s, but the servers found are %s; "+
		"install the PostgreSQL %s server (Debian/Ubuntu: apt-get install postgresql-%s) or put its bin directory on PATH, "+
		"or dump the data with that version's pg_dump and move %s away to start afresh with PostgreSQL %s",
		c.pgData, want, strings.Join(found, ", "), want, want, c.pgData, majorOf(have))
}

// spawn starts postmaster directly (no pg_ctl) and waits until it accepts
// connections. Settings go on the command line so the cluster's own
// configuration files stay as initdb wrote them.
func (c *Cluster) spawn(ctx context.Context) error {
	logf, err := c.openLog()
	if err != nil {
		return err
	}
	defer logf.Close() // the server keeps its own copy
	args := append([]string{"-D", c.pgData, "-k", c.sockDir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=", // Unix socket only
		"-c", "unix_socket_permissions=0700", // trust auth: nobody but the owner (and root) may connect
	}, c.collectorArgs()...)
	cmd := exec.Command(c.bin("postgres"), args...)
	cmd.Dir = c.pgData
	cmd.Env = append(serverEnv(), c.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = c.owner.procAttr(true)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("embedpg: starting %s: %w", cmd.Path, err)
	}
	// Reap the server whenever it ends, so it never lingers as a zombie.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	c.logger.Info("started embedded PostgreSQL", "pid", cmd.Process.Pid, "log", c.path(logFile))
	for {
		err := errors.New("still starting up")
		if !starting(c.pgData) {
			err = c.ping(ctx)
		}
		if err == nil {
			return nil
		}
		select {
		case <-done:
			c.awaitCollector()
			return fmt.Errorf("embedpg: PostgreSQL exited during start-up (%v); last lines of %s:\n%s",
				waitErr, c.path(logFile), c.logTail())
		case <-ctx.Done():
			if starting(c.pgData) {
				return c.stillStarting(cmd.Process.Pid, ctx.Err())
			}
			abort(cmd.Process, done)
			return fmt.Errorf("embedpg: PostgreSQL did not accept connections in time (%w; last error: %v); last lines of %s:\n%s",
				ctx.Err(), err, c.path(logFile), c.logTail())
		case <-time.After(pollInterval):
		}
	}
}

// collectorArgs have the server write its log through its logging
// collector, to postgres.log in the data directory, which the collector
// opens anew when asked (rotateLog) and never rotates by itself.
func (c *Cluster) collectorArgs() []string {
	return []string{
		"-c", "logging_collector=on",
		"-c", "log_directory=" + c.dataDir,
		"-c", "log_filename=" + logFile,
		"-c", "log_rotation_age=0",
		"-c", "log_rotation_size=0",
	}
}

// awaitCollector waits a little for the logging collector of a server that
// exited to write the last lines it logged, which say why: the collector
// ends after the postmaster.
func (c *Cluster) awaitCollector() {
	deadline := time.Now().Add(5 * time.Second)
	for len(processesUsing(c.pgData)) > 0 && time.Now().Before(deadline) {
		time.Sleep(pollInterval)
	}
}

// errStillStarting is wrapped by the error of a Start that gave up waiting
// for a server still starting up, which it leaves running.
var errStillStarting = errors.New("still starting up")

// stillStarting is the error for a server still starting up when Start
// gives up on it. After a crash the server replays its write-ahead log
// first, which can outlast StartTimeout; stopping it would throw that work
// away and the next start would begin it again, without end.
func (c *Cluster) stillStarting(pid int, err error) error {
	return newError("", errStillStarting, func(t Terms) string {
		return fmt.Sprintf("embedpg: PostgreSQL (pid %d) on %s is %v (%v), as after a crash while it replays its write-ahead log, which can take minutes; "+
			"it is left running: start %s again in a while, or see %s",
			pid, c.pgData, errStillStarting, err, t.Program, c.path(logFile))
	})
}

// abort ends a server that failed to come up: immediate shutdown, then kill.
func abort(p *os.Process, done <-chan struct{}) {
	_ = p.Signal(syscall.SIGQUIT)
	select {
	case <-done:
	case <-time.After(quitTimeout):
		_ = p.Kill()
	}
}

func (c *Cluster) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, c.urlFor(db))
}

// ping returns nil when the server is up: it accepts a connection, or it
// answers with an error other than "starting up / shutting down" (57P03),
// such as too many clients, which says it runs all the same.
func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := c.connect(ctx, "postgres")
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code != "57P03" {
		return nil
	}
	return err
}

func (c *Cluster) createDatabase(ctx context.Context) error {
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("embedpg: connecting to the embedded server: %w; see %s", err, c.path(logFile))
	}
	defer conn.Close(context.Background())
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", dbName).Scan(&exists)
	if err == nil && !exists {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+dbName)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: made meanwhile by a client outside our lock
		err = nil
	}
	if err != nil {
		return fmt.Errorf("embedpg: creating database %s: %w", dbName, err)
	}
	return nil
}

// stopServer shuts the server down: SIGINT asks for a fast shutdown (clients
// are disconnected, a checkpoint is written, no recovery at next start);
// SIGQUIT, the last resort, is an immediate shutdown that needs recovery.
func (c *Cluster) stopServer(ctx context.Context) error {
	pid, found := readPID(c.pgData)
	if !found || !processAlive(pid) || !isPostgresFor(pid, c.pgData) {
		// Nothing runs; a stale postmaster.pid is cleared by the next Start.
		c.removeSocketDir()
		return nil
	}
	c.logger.Info("stopping embedded PostgreSQL", "pid", pid)
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("embedpg: stopping PostgreSQL (pid %d): %w", pid, err)
	}
	if c.waitStopped(ctx, stopTimeout, pid) {
		c.removeSocketDir()
		return nil
	}
	c.logger.Warn("PostgreSQL did not stop in time; sending SIGQUIT (immediate shutdown)", "pid", pid)
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	if c.waitStopped(context.Background(), quitTimeout, pid) {
		c.removeSocketDir()
		return nil
	}
	return fmt.Errorf("embedpg: PostgreSQL (pid %d) in %s did not stop; kill it (kill -9 %d), the next start recovers",
		pid, c.pgData, pid)
}

// waitStopped waits until the postmaster pid is gone. The postmaster removes
// postmaster.pid just before it exits, so a gone pid means a gone file unless
// the server was killed (then the next Start clears the file).
func (c *Cluster) waitStopped(ctx context.Context, timeout time.Duration, pid int) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for processAlive(pid) {
		if sleepCtx(ctx, pollInterval) != nil {
			return !processAlive(pid)
		}
	}
	return true
}
