//go:build linux || darwin

package embedpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	superuser = "pgbus" // role created by initdb
	dbName    = "pgbus" // database handed out by URL
	port      = 5432    // names the socket file only: the server has no TCP listener
	// socketName is the socket file in the socket directory.
	socketName = ".s.PGSQL.5432"
	// maxSocketPath keeps socket paths below the ~104-108 byte sun_path limit.
	maxSocketPath = 100

	lockFile  = "pgbus.lock"  // exclusive flock around start and stop
	usersFile = "pgbus.users" // shared flock per Cluster in use
	logFile   = "postgres.log"
)

// Cluster is a running embedded PostgreSQL server, possibly shared with other
// processes that started a Cluster on the same data directory. Call Stop when
// done with it.
type Cluster struct {
	dataDir string
	pgData  string
	sockDir string
	binDir  string
	owner   serverUser
	logger  *slog.Logger
	timeout time.Duration // Options.StartTimeout
	env     []string      // Options.Env

	mu        sync.Mutex
	users     lockFD // holds LOCK_SH on pgbus.users while in use; -1 after Stop
	stopWatch func() // ends the watch over the server and its log
}

// Start starts the embedded server on opts.DataDir, creating the cluster on
// first use, or adopts the server already running there (started by another
// process, or left behind by one that was killed). The database "pgbus"
// exists when Start returns.
//
// An error whose advice names a setting (Options.DataDir, a running server
// instead) or the program calling Start is an *Error, with Field set when
// another value of that Options field avoids it; a front end says it in its
// own words with Error.In.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	owner, err := currentServerUser()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		dataDir: opts.DataDir,
		pgData:  filepath.Join(opts.DataDir, "pgdata"),
		sockDir: socketDir(opts.DataDir),
		binDir:  opts.BinDir,
		owner:   owner,
		logger:  opts.Logger.With("data_dir", opts.DataDir),
		timeout: opts.StartTimeout,
		env:     opts.Env,
		users:   -1,
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.prepareDataDir(); err != nil {
		return nil, err
	}
	lk, err := lock(ctx, c.path(lockFile), syscall.LOCK_EX, owner)
	if err != nil {
		return nil, c.lockErr(err)
	}
	defer lk.close()
	if c.users, err = lock(ctx, c.path(usersFile), syscall.LOCK_SH, owner); err != nil {
		return nil, c.lockErr(err)
	}
	if err := c.ensureRunning(ctx); err != nil {
		if errors.Is(err, errStillStarting) { // left for the next start to adopt
			c.users.close()
			return nil, err
		}
		// Do not leave a server we started half-way without a holder.
		if lerr := c.leave(context.Background()); lerr != nil {
			c.logger.Warn("cleaning up after failed start", "err", lerr)
		}
		return nil, err
	}
	c.stopWatch = c.watch()
	return c, nil
}

// URL returns a libpq/pgx connection string for database pgbus as superuser
// pgbus over the Unix socket, e.g.
// postgres://pgbus@/pgbus?host=/var/lib/pgbus&sslmode=disable.
func (c *Cluster) URL() string { return c.urlFor(dbName) }

// DataDir returns the absolute data directory of the cluster.
func (c *Cluster) DataDir() string { return c.dataDir }

// Stop ends this Cluster's use of the server and shuts the server down when no
// other Cluster, in this or another process, still uses it: a fast shutdown
// (clients are disconnected), escalated to an immediate shutdown after 30s or
// when ctx ends. A restart of the server under way, as when its Unix socket
// was deleted (up to about 40s plus StartTimeout), or a start of a server
// that died (up to StartTimeout), is waited for first, so that the shutdown
// is a fast and clean one still. Calling Stop again does nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users < 0 {
		return nil
	}
	c.stopWatch()
	lk, err := lock(ctx, c.path(lockFile), syscall.LOCK_EX, c.owner)
	if err != nil {
		// Without the lock we may not decide about the server; giving up our
		// share leaves it to the next Start (adopt) or the last Stop.
		c.users.close()
		c.users = -1
		return fmt.Errorf("%w; the server is left running and the next start reuses it", c.lockErr(err))
	}
	defer lk.close()
	return c.leave(ctx)
}

// leave drops this Cluster's share of the server and stops the server if that
// was the last share. The caller holds pgbus.lock, so no Start can take a
// share between the check and the shutdown.
func (c *Cluster) leave(ctx context.Context) error {
	fd, last, err := c.dropShare(ctx)
	if err != nil {
		return fmt.Errorf("embedpg: stopping: %w", err)
	}
	defer fd.close()
	if !last {
		c.logger.Info("embedded PostgreSQL still in use by another process; leaving it running")
		return nil
	}
	return c.stopServer(ctx)
}

// dropShare gives up this Cluster's share of pgbus.users and reports, on
// a descriptor of its own left open for the caller to close, whether it
// was the last. A process forked by another goroutine of this one (a job
// run by a command, pg_ctl) holds a copy of every descriptor until its
// program starts, the shared lock's among them, so the share can outlive
// its close by a moment: the server, taken for still in use, would be left
// running. The exclusive lock is tried again for up to shareGoneWait; a
// process that uses the server holds its share far longer, and none can
// take one meanwhile, as the caller holds pgbus.lock.
func (c *Cluster) dropShare(ctx context.Context) (lockFD, bool, error) {
	c.users.close()
	c.users = -1
	fd, err := openLock(c.path(usersFile), c.owner)
	if err != nil {
		return -1, false, err
	}
	deadline := time.Now().Add(shareGoneWait)
	for {
		last, err := fd.try(syscall.LOCK_EX)
		if err != nil {
			fd.close()
			return -1, false, err
		}
		if last || time.Now().After(deadline) || ctx.Err() != nil {
			return fd, last, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shareGoneWait bounds how long dropShare waits for copies of a share's
// descriptor in processes being started to go.
const shareGoneWait = time.Second

func (c *Cluster) path(name string) string { return filepath.Join(c.dataDir, name) }

func (c *Cluster) bin(name string) string { return filepath.Join(c.binDir, name) }

func (c *Cluster) urlFor(db string) string {
	// Slashes may stay literal in a query; keeping them makes the URL readable.
	host := strings.ReplaceAll(url.QueryEscape(c.sockDir), "%2F", "/")
	return "postgres://" + superuser + "@/" + db + "?host=" + host + "&sslmode=disable"
}

func (c *Cluster) lockErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("embedpg: %s is a symbolic link, which pgbus does not follow; remove it", pe.Path)
	}
	holders := lockHolders(c.path(lockFile))
	if len(holders) == 0 {
		return fmt.Errorf("embedpg: waiting for the lock on %s (another process is starting or stopping the server): %w; "+
			"try again once it is done", c.path(lockFile), err)
	}
	pids := strings.Trim(fmt.Sprint(holders), "[]")
	return fmt.Errorf("embedpg: waiting for the lock on %s, held by pid %s (another process starting or stopping the server): %w; "+
		"try again once it is done, or stop it if it hangs (kill %s)", c.path(lockFile), pids, err, pids)
}

// prepareDataDir creates the data directory and hands it to the server user.
// Parents get 0755 so the server user can traverse the ones we create. An
// existing directory must be a cluster's (or empty): one given by mistake is
// refused before anything in it changes hands.
func (c *Cluster) prepareDataDir() error {
	// The embedded server may not be what was meant at all (a database
	// URL left unset, as by a mistyped Secret in a container): the
	// error names the running server's way too.
	mkdirErr := func(err error) *Error {
		return newError("DataDir", err, func(t Terms) string {
			msg := fmt.Sprintf("embedpg: creating data directory: %v; choose a writable directory with %s, or %s", err, t.DataDir, t.Server)
			if t.NoEmbedded != "" {
				msg += ", or " + t.NoEmbedded
			}
			return msg
		})
	}
	if err := os.MkdirAll(filepath.Dir(c.dataDir), 0o755); err != nil {
		return mkdirErr(err)
	}
	if err := os.Mkdir(c.dataDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return mkdirErr(err)
	}
	if err := c.checkOwnDataDir(); err != nil {
		return err
	}
	if err := c.owner.chown(c.dataDir); err != nil {
		return fmt.Errorf("embedpg: handing %s to user %s: %w", c.dataDir, c.owner, err)
	}
	return c.owner.checkReachable(c.dataDir)
}

// ownEntries are the names Start and the server create in a data
// directory; lost+found is what a new file system holds at its root.
var ownEntries = map[string]bool{
	"pgdata": true, "pgdata.initdb": true, lockFile: true, usersFile: true,
	logFile: true, logFile + ".1": true, socketName: true, socketName + ".lock": true,
}

// checkOwnDataDir refuses a data directory that is not a directory, or that
// holds entries but none of a cluster's.
func (c *Cluster) checkOwnDataDir() error {
	st, err := os.Stat(c.dataDir)
	if err != nil {
		return dataDirError(err, func(dataDir string) string {
			return fmt.Sprintf("embedpg: data directory: %v; choose another with %s", err, dataDir)
		})
	}
	if !st.IsDir() {
		return dataDirError(nil, func(dataDir string) string {
			return fmt.Sprintf("embedpg: data directory %s is not a directory; choose another with %s", c.dataDir, dataDir)
		})
	}
	entries, err := os.ReadDir(c.dataDir)
	if errors.Is(err, fs.ErrPermission) {
		owner := ownerName(st)
		as := owner
		if owner != "root" {
			as += " or as root"
		}
		return newError("DataDir", err, func(t Terms) string {
			return fmt.Sprintf("embedpg: data directory %s belongs to user %s (mode %v), and %s runs as user %s, who may not read it: "+
				"run %s as %s, or choose another directory with %s",
				c.dataDir, owner, st.Mode().Perm(), t.Program, userName(os.Geteuid()), t.Program, as, t.DataDir)
		})
	}
	if err != nil {
		return dataDirError(err, func(dataDir string) string {
			return fmt.Sprintf("embedpg: reading data directory: %v; choose another with %s", err, dataDir)
		})
	}
	var foreign []string
	for _, e := range entries {
		if ownEntries[e.Name()] {
			return nil
		}
		if e.Name() != "lost+found" {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	if len(foreign) > 3 {
		foreign = append(foreign[:3], "...")
	}
	return dataDirError(nil, func(dataDir string) string {
		return fmt.Sprintf("embedpg: data directory %s holds files of something else (%s) and no PostgreSQL cluster of pgbus; "+
			"choose an empty or new directory with %s", c.dataDir, strings.Join(foreign, ", "), dataDir)
	})
}

// dataDirError is an Error caused by err (nil for none) that another
// Options.DataDir avoids; text says it, naming where the data directory is
// chosen as given.
func dataDirError(err error, text func(dataDir string) string) *Error {
	return newError("DataDir", err, func(t Terms) string { return text(t.DataDir) })
}

// socketDir is dataDir itself unless the socket path would be too long for a
// Unix socket; then a short per-data-directory directory under the temporary
// directory (or /tmp, if that is long too).
func socketDir(dataDir string) string {
	if len(filepath.Join(dataDir, socketName)) <= maxSocketPath {
		return dataDir
	}
	name := "pgbus-" + shortHash(dataDir)
	d := filepath.Join(os.TempDir(), name)
	if len(filepath.Join(d, socketName)) <= maxSocketPath {
		return d
	}
	return filepath.Join("/tmp", name)
}

// prepareSocketDir creates a separate socket directory, refusing one that
// somebody else made: a directory planted there could intercept connections.
func (c *Cluster) prepareSocketDir() error {
	if c.sockDir == c.dataDir {
		return nil
	}
	if err := os.Mkdir(c.sockDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("embedpg: creating socket directory: %w", err)
	}
	st, err := os.Lstat(c.sockDir)
	if err != nil {
		return fmt.Errorf("embedpg: socket directory: %w", err)
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || sys == nil || (int(sys.Uid) != os.Geteuid() && int(sys.Uid) != c.owner.uid) {
		return fmt.Errorf("embedpg: socket directory %s exists but is not a directory owned by us; remove it", c.sockDir)
	}
	if err := c.owner.chown(c.sockDir); err != nil {
		return fmt.Errorf("embedpg: handing %s to user %s: %w", c.sockDir, c.owner, err)
	}
	if err := os.Chmod(c.sockDir, 0o700); err != nil {
		return fmt.Errorf("embedpg: socket directory: %w", err)
	}
	return c.owner.checkReachable(c.sockDir)
}

// removeSocketDir removes a separate socket directory once the server is
// gone; it fails harmlessly while the directory is not empty.
func (c *Cluster) removeSocketDir() {
	if c.sockDir != c.dataDir {
		_ = os.Remove(c.sockDir)
	}
}

// ownerName names the user owning a file, for messages.
func ownerName(st fs.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return userName(int(sys.Uid))
	}
	return "(unknown)"
}

// userName is the name of the user with uid, or the number when it has none.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}
