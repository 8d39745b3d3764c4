package embedpg

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options configure Start. The zero value is ready to use.
type Options struct {
	// DataDir holds the cluster (pgdata/), its log (postgres.log, and
	// postgres.log.1 once it was rotated), the lock
	// files and, when the path is short enough, the Unix socket.
	// Default: DefaultDataDir().
	DataDir string
	// BinDir is the directory holding initdb and postgres; Start refuses
	// one without them, wrapping ErrNoBinaries.
	// Default: FindBinDir()'s, or for an existing cluster the first
	// directory of the same search whose server is of the cluster's major
	// version.
	BinDir string
	// Logger receives progress messages. Default: discard.
	Logger *slog.Logger
	// StartTimeout bounds Start as a whole: waiting for other processes,
	// initdb and server start-up; and each start again of a server that
	// died while the Cluster was in use. Default: 60s.
	StartTimeout time.Duration
	// Env is more of the server's environment ("NAME=value"), beside the
	// little of this process's it gets (the locale, the time zone, library
	// paths): a library to preload (LD_PRELOAD) and its settings, say.
	// It applies when Start creates or starts the server, not to one it
	// adopts.
	Env []string
}

const defaultStartTimeout = 60 * time.Second

// withDefaults fills unset fields and makes DataDir absolute, because the
// path is handed to postgres, hashed for the socket directory and compared
// with /proc/<pid>/cwd.
func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir()
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, fmt.Errorf("embedpg: data directory %q: %w", o.DataDir, err)
	}
	o.DataDir = abs
	if o.BinDir == "" {
		if o.BinDir, err = findBinDir(currentSearch(), clusterVersion(filepath.Join(o.DataDir, "pgdata"))); err != nil {
			return o, err
		}
	} else if !hasServer(o.BinDir) {
		// Checked before anything is made: a wrong one failed only as
		// initdb or postgres would not start, with advice about the data
		// directory.
		return o, fmt.Errorf("embedpg: %w in Options.BinDir %s (it needs initdb and postgres): give the directory of the server binaries (pg_config --bindir prints it), or leave BinDir empty to search for them",
			ErrNoBinaries, o.BinDir)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = defaultStartTimeout
	}
	return o, nil
}

// clusterVersion returns the major version in pgdata/PG_VERSION, or "" when
// there is no cluster yet.
func clusterVersion(pgdata string) string {
	b, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// DefaultDataDir returns where the embedded cluster lives unless told
// otherwise: $PGBUS_DATA_DIR when set; as root /var/lib/pgbus (the server runs
// as an unprivileged user, who cannot reach a directory under /root);
// otherwise $XDG_DATA_HOME/pgbus or ~/.local/share/pgbus, and without a
// home directory pgbus-UID in the temporary directory.
func DefaultDataDir() string {
	if d := os.Getenv("PGBUS_DATA_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/pgbus"
	}
	// The XDG spec says to ignore relative values.
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "pgbus")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "pgbus")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("pgbus-%d", os.Geteuid()))
}
