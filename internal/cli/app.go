package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lmittmann/tint"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/store"
)

// app holds what every command shares: streams, global flags, the logger.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	databaseURL string
	dataDir     string
	logFormat   string
	logLevel    string

	log *slog.Logger
}

func (a *app) addGlobalFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&a.databaseURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL); empty starts the embedded PostgreSQL")
	f.StringVar(&a.dataDir, "data-dir", "", "embedded PostgreSQL data directory (env PGBUS_DATA_DIR; default "+embedpg.DefaultDataDir()+")")
	f.StringVar(&a.logFormat, "log-format", envOr("PGBUS_LOG_FORMAT", "auto"), "log format on stderr: auto (text on a terminal, else JSON), text or json (env PGBUS_LOG_FORMAT)")
	f.StringVar(&a.logLevel, "log-level", envOr("PGBUS_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env PGBUS_LOG_LEVEL)")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (a *app) setup(*cobra.Command) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level %q: use debug, info, warn or error", a.logLevel)}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch a.logFormat {
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	case "text":
		a.log = slog.New(tint.NewHandler(a.stderr, &tint.Options{Level: level, NoColor: !isTerminal(a.stderr)}))
	case "auto":
		if isTerminal(a.stderr) {
			a.log = slog.New(tint.NewHandler(a.stderr, &tint.Options{Level: level}))
		} else {
			a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
		}
	default:
		return usageError{fmt.Errorf("--log-format %q: use auto, text or json", a.logFormat)}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// database is an open, migrated store and what it runs on.
type database struct {
	*store.Store
	Status   store.MigrationStatus
	Embedded *embedpg.Cluster // nil for an external server
}

// Where describes the database for status lines, without credentials.
func (d *database) Where() string {
	if d.Embedded != nil {
		return "embedded PostgreSQL in " + d.Embedded.DataDir()
	}
	return "PostgreSQL at " + d.Store.Pool().Config().ConnConfig.Host
}

// Close closes the pool and stops the embedded server if this process was
// its last user.
func (d *database) Close() {
	d.Store.Close()
	if d.Embedded != nil {
		_ = d.Embedded.Stop(context.Background())
	}
}

// openDatabase connects (starting the embedded server when no URL is given)
// and migrates: every command runs the migrations on start.
func (a *app) openDatabase(ctx context.Context) (*database, error) {
	db := &database{}
	url := a.databaseURL
	if url == "" {
		cluster, err := embedpg.Start(ctx, embedpg.Options{DataDir: a.dataDir, Logger: a.log})
		if err != nil {
			return nil, err
		}
		db.Embedded, url = cluster, cluster.URL()
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		db.stopEmbedded()
		return nil, err
	}
	db.Store = s
	if db.Status, err = s.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func (d *database) stopEmbedded() {
	if d.Embedded != nil {
		_ = d.Embedded.Stop(context.Background())
	}
}
