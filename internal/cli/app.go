package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/textlog"
	"github.com/pgbus/pgbus/ops"
)

// app holds what every command shares: streams, global flags, the
// configuration file, the logger.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// clock is the operations layer's, once a command ran an operation:
	// the ages its tables show count on it.
	clock func() time.Time

	// args are the command line's words after the program's name.
	args []string

	configPath  string
	databaseURL string
	dataDir     string
	noEmbedded  bool
	logFormat   string
	logLevel    string

	// cfg is the configuration file; empty (Path "") when none was given.
	cfg *config.File
	// sources says where each resolved flag's value came from, for errors.
	sources map[string]string
	// again reads a resolved flag's value again, for one read from a
	// secret's file (lookupSetting), which a rotation may rewrite.
	again map[string]func() (string, error)

	log *slog.Logger

	// commandPath is the command's path ("pgbus dlq retry"), which names its
	// database sessions (application_name) unless the URL names them.
	commandPath string

	// role is the database role the command connected as, once it has.
	role string
	// waitForDB is how long to wait for a database at DATABASE_URL that
	// cannot be reached yet: set by the long-running commands, which a
	// supervisor may start before the database is up.
	waitForDB time.Duration
	// poolInUse is set by the commands that use their pool's connections
	// at once (work, demo, serve, dashboard, bench), which alone are
	// warned of a pool past the connection limit of their role or
	// database (dbopen.Options.PoolInUse); a one-shot command's pool is
	// fitted all the same, without a word.
	poolInUse bool
	// callTimeout is the database call timeout of the operations layer
	// (ops.Options.DatabaseCallTimeout), once settled: by the commands with
	// --database-call-timeout, else as the database opens
	// (settleCallTimeout).
	callTimeout time.Duration
	// connectBound, when set and shorter than callTimeout, bounds the
	// connection to the database instead, for a command asked when
	// something is wrong, which must answer then: pgbus health, whose
	// check is bounded by ops.HealthCheckTimeout too. A paused PgBouncer
	// takes the connection and answers nothing.
	connectBound time.Duration
	// gate, when set, holds the calls of the operations layer while pgbus
	// serve readies a database that did not answer at its start.
	gate *ops.Gate
	// ownWorkers is the state of serve's embedded workers, which every
	// operations layer of the process reports in its health verdict.
	ownWorkers *ops.OwnWorkers
	// trace is the command's tracing, once set up (tracing.go).
	trace traceSetup
	// flagsFailed is set when the command's flags could not be parsed,
	// so that whether --json was given is read from its arguments.
	flagsFailed bool
	// carry is the global flags next steps keep, as written after them
	// (setCarry): "" when none was given on the command line.
	carry string
	// carryURL is the --database-url carry holds, if any: a next step run
	// as another role than this command's leaves it out (otherRole).
	carryURL string
}

// longRunningWait is how long pgbus work and pgbus dashboard wait for their
// database at start-up (pgbus serve, for the embedded PostgreSQL only).
const longRunningWait = time.Minute

// Environment variables of the global settings.
const (
	EnvConfig      = "PGBUS_CONFIG"
	EnvDatabaseURL = "DATABASE_URL"
	EnvDataDir     = "PGBUS_DATA_DIR"
	EnvLogFormat   = "PGBUS_LOG_FORMAT"
	EnvLogLevel    = "PGBUS_LOG_LEVEL"
	EnvNoEmbedded  = "PGBUS_NO_EMBEDDED"
)

func (a *app) addGlobalFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&a.configPath, "config", "", "configuration file, YAML (env "+EnvConfig+"); see pgbus help config")
	f.StringVar(&a.databaseURL, "database-url", "", "PostgreSQL URL (env "+EnvDatabaseURL+", or a file named by "+EnvDatabaseURL+fileSuffix+"; config database_url); leave it out, with none of those set, to start the embedded PostgreSQL")
	f.StringVar(&a.dataDir, "data-dir", "", "embedded PostgreSQL data directory (env "+EnvDataDir+", config data_dir; default "+embedpg.DefaultDataDir()+")")
	f.BoolVar(&a.noEmbedded, "no-embedded", false, "never start the embedded PostgreSQL: without a database URL, stop with an error (env "+EnvNoEmbedded+"=1, config no_embedded)")
	f.StringVar(&a.logFormat, "log-format", "auto", "log format on stderr: auto (text on a terminal, else JSON), text or json (env "+EnvLogFormat+", config log_format)")
	f.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error (env "+EnvLogLevel+", config log_level)")
}

// setup runs before every command: it reads the configuration file, settles
// every global setting (flag > environment > file > default) and makes the
// logger. A bad configuration stops here, before anything is touched.
func (a *app) setup(cmd *cobra.Command) error {
	fs := cmd.Flags()
	if err := refuseEmpty(fs); err != nil {
		return err
	}
	a.setCarry(fs)
	a.commandPath = cmd.CommandPath()
	a.sources = map[string]string{}
	a.again = map[string]func() (string, error){}
	a.cfg = &config.File{}
	if v, set := os.LookupEnv(EnvConfig); set && strings.TrimSpace(v) == "" && !fs.Changed("config") {
		// Read as unset, a deploy whose configuration path came through
		// empty would run without its queues' settings and handlers.
		return usageError{fmt.Errorf("environment variable %s is set but empty: give the configuration file's path, or unset it (unset %s) to run without one", EnvConfig, EnvConfig)}
	}
	if err := a.resolve(fs, "config", "", EnvConfig); err != nil {
		return err
	}
	if a.configPath != "" {
		cfg, err := config.Load(a.configPath)
		if err != nil {
			return usageError{overridden(fs, err)}
		}
		if err := cfg.CheckHandlers(); err != nil {
			return usageError{err}
		}
		a.cfg = cfg
	}
	if v, set := os.LookupEnv(EnvDatabaseURL); set && strings.TrimSpace(v) == "" && !fs.Changed("database-url") {
		// Read as unset, it would start the embedded PostgreSQL: a deploy
		// whose secret came through empty would send jobs there.
		return usageError{fmt.Errorf("environment variable %s is set but empty: give the database's URL, or unset it (unset %s) to use the embedded PostgreSQL", EnvDatabaseURL, EnvDatabaseURL)}
	}
	// The file's places take ${NAME}, read only when neither a flag nor
	// the environment gives the setting first.
	for _, s := range []struct{ flag, key, env string }{
		{"database-url", "database_url", EnvDatabaseURL},
		{"data-dir", "data_dir", EnvDataDir},
	} {
		if err := a.resolveFrom(fs, s.flag, func() (string, error) { return a.cfg.Expanded(s.key) }, s.env); err != nil {
			return err
		}
	}
	for _, s := range []struct{ flag, file, env string }{
		{"no-embedded", fileBool(a.cfg.NoEmbedded), EnvNoEmbedded},
		{"log-format", a.cfg.LogFormat, EnvLogFormat},
		{"log-level", a.cfg.LogLevel, EnvLogLevel},
	} {
		if err := a.resolve(fs, s.flag, s.file, s.env); err != nil {
			return err
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usageError{fmt.Errorf("%s %q%s: use debug, info, warn or error", a.setting("log-level", "log level"), a.logLevel, a.from("log-level"))}
	}
	var h slog.Handler
	switch a.logFormat {
	case "json":
		h = jsonLogHandler(a.stderr, level)
	case "text":
		h = textlog.New(a.stderr, level, isTerminal(a.stderr))
	case "auto":
		if isTerminal(a.stderr) {
			h = textlog.New(a.stderr, level, true)
		} else {
			h = jsonLogHandler(a.stderr, level)
		}
	default:
		return usageError{fmt.Errorf("%s %q%s: use auto, text or json", a.setting("log-format", "log format"), a.logFormat, a.from("log-format"))}
	}
	// Job errors quote downstreams verbatim: the log is redacted like
	// every other output.
	a.log = slog.New(ops.RedactingHandler(h))
	a.warnMisspelledVariables(os.Environ())
	if a.databaseURL != "" && a.dataDir != "" {
		// Both given: the URL's database is used, and the directory,
		// meant for the embedded PostgreSQL, would go unused silently.
		a.log.Warn("pgbus: a database URL is given ("+a.sourceWords("database-url", "database_url")+"), so the embedded PostgreSQL does not start and its data directory ("+
			a.sourceWords("data-dir", "data_dir")+") is unused: remove the one not meant", "data_dir", a.dataDir)
	}
	if a.cfg.Path() != "" {
		a.log.Debug("pgbus: configuration file read", "path", a.cfg.Path(), "queues", a.cfg.QueueNames())
	}
	return nil
}

// resolve settles one flag in the order flag > environment > configuration
// file > default: when the flag was not given, the first environment
// variable that is set (for a secret's, or the file its _FILE twin names:
// lookupSetting), else the file's value (fileValue, "" for none),
// replaces the flag's default. Values go through the flag's own parser, so
// a bad one is rejected as it would be on the command line.
func (a *app) resolve(fs *pflag.FlagSet, name, fileValue string, envs ...string) error {
	return a.resolveFrom(fs, name, func() (string, error) { return fileValue, nil }, envs...)
}

// resolveFrom is resolve with the file's value read by file, only when
// neither the flag nor an environment variable gives the setting: a
// value with ${NAME}, whose variable need be set only then.
func (a *app) resolveFrom(fs *pflag.FlagSet, name string, file func() (string, error), envs ...string) error {
	fl := fs.Lookup(name)
	if fl == nil {
		return fmt.Errorf("internal error: no flag --%s", name)
	}
	if fl.Changed {
		a.sources[name] = "--" + name
		return nil
	}
	for _, e := range envs {
		v, source, again, err := lookupSetting(e)
		if err != nil {
			return usageError{err}
		}
		if strings.TrimSpace(v) == "" {
			if err := setButEmpty(e); err != nil {
				return err
			}
		}
		if v != "" {
			if err := fl.Value.Set(v); err != nil {
				return usageError{fmt.Errorf("%s=%q: %s", source, v, badValue(fl, err))}
			}
			a.sources[name] = source
			if again != nil {
				a.again[name] = again
			}
			return nil
		}
	}
	fileValue, err := file()
	if err != nil {
		return usageError{err}
	}
	if fileValue != "" {
		if err := fl.Value.Set(fileValue); err != nil {
			return usageError{a.cfg.Errorf(configKeyOf(name), "%q: %s", fileValue, badValue(fl, err))}
		}
		a.sources[name] = "config " + a.cfg.Path()
	}
	return nil
}

// setButEmpty refuses the environment variable name set but empty (or
// blank): read as unset, a deploy whose secret or template variable came
// through empty would run otherwise than it was told, an empty
// PGBUS_MCP_TOKEN serving a loopback address without a token, an empty
// PGBUS_QUEUES working every queue of the file. nil when it is unset or
// holds a value.
func setButEmpty(name string) error {
	if v, set := os.LookupEnv(name); set && strings.TrimSpace(v) == "" {
		return usageError{fmt.Errorf("environment variable %s is set but empty, which would be read as unset: give it a value, or unset it (unset %s)", name, name)}
	}
	return nil
}

// badValue says what a value that fl cannot read should look like: the
// parser's own words ("strconv.ParseBool: parsing ...: invalid syntax")
// name a Go function, not what to give instead. The value and where it
// came from are the caller's to say.
func badValue(fl *pflag.Flag, err error) string {
	var w worded
	if errors.As(err, &w) {
		return w.Error()
	}
	switch fl.Value.Type() {
	case "bool":
		return "not a boolean: give 1, true, 0 or false (or leave it unset)"
	case "duration":
		return "not a duration: give a number with a unit, such as 500ms, 30s, 2m or 7d (or leave it unset)"
	case "int":
		if errors.Is(err, strconv.ErrRange) {
			return "out of range: give a smaller whole number (or leave it unset)"
		}
		return "not a whole number: give one in decimal digits, such as 8 (or leave it unset)"
	}
	return err.Error()
}

// fileBool is a configuration file's boolean as resolve takes it: "" when
// the file leaves it out.
func fileBool(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

// from returns " (from SOURCE)" for a resolved flag whose value did not
// come from the command line, for error messages.
func (a *app) from(name string) string {
	src, ok := a.sources[name]
	if !ok || src == "--"+name {
		return ""
	}
	return " (from " + src + ")"
}

// setting names the setting of flag name at the start of an error about
// its value: the flag as typed (--poll-interval) when the command line
// gave the value, else words (poll interval), which from follows with
// where the value came from.
func (a *app) setting(name, words string) string {
	if a.sources[name] == "--"+name {
		return "--" + name
	}
	return words
}

// configKeyOf maps a global flag to its configuration file key.
// fileKeyEnvs are the environment variables that give a setting of the
// configuration file, by its key, for overridden.
var fileKeyEnvs = map[string][]string{
	"database_url":                 {EnvDatabaseURL, EnvDatabaseURL + fileSuffix},
	"data_dir":                     {EnvDataDir},
	"no_embedded":                  {EnvNoEmbedded},
	"log_format":                   {EnvLogFormat},
	"log_level":                    {EnvLogLevel},
	"worker.poll_interval":         {EnvPollInterval},
	"worker.drain_timeout":         {EnvDrainTimeout},
	"worker.no_listen":             {EnvNoListen},
	"worker.database_call_timeout": {EnvDatabaseCallTimeout},
	"safe_fields":                  {EnvSafeFields},
}

// overridden is err, the configuration file's refusal, saying which flag
// of the command, or which environment variable, gives the setting of
// the key it refuses: the file is read whole and checked before either
// is applied, as every command that reads it would meet the value, so
// the value is refused even where it would go unused; without this the
// person looks for why the flag was not taken.
func overridden(fs *pflag.FlagSet, err error) error {
	var cerr *config.Error
	if !errors.As(err, &cerr) || cerr.Key == "" {
		return err
	}
	by := ""
	fs.VisitAll(func(fl *pflag.Flag) {
		if by == "" && fl.Changed && configKeyOf(fl.Name) == cerr.Key {
			by = "--" + fl.Name
		}
	})
	if by == "" {
		for _, env := range fileKeyEnvs[cerr.Key] {
			if v, set := os.LookupEnv(env); set && strings.TrimSpace(v) != "" {
				by = env
				break
			}
		}
	}
	if by == "" {
		return err
	}
	return reworded{fmt.Sprintf("%v; %s overrides it for this command, but the file is checked whole, for every command that reads it: correct it or remove the key", err, by), err}
}

func configKeyOf(flag string) string {
	switch flag {
	case "poll-interval":
		return "worker.poll_interval"
	case "drain-timeout":
		return "worker.drain_timeout"
	case "no-listen":
		return "worker.no_listen"
	case "database-call-timeout":
		return "worker.database_call_timeout"
	}
	out := []byte(flag)
	for i, c := range out {
		if c == '-' {
			out[i] = '_'
		}
	}
	return string(out)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openDB opens the database (dbopen): migrate is for the commands that
// create queues or run workers (migrate, work, demo, serve unless it is
// --read-only without workers, queue create, bench); the rest only check
// that the schema is current and fail, saying to run pgbus migrate, when it
// is not. migrateCommand's help lists both sets.
func (a *app) openDB(ctx context.Context, migrate bool) (*dbopen.DB, error) {
	db, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	a.role = db.Role()
	if err := a.prepare(ctx, db, migrate); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// prepare readies db's schema (dbopen.DB.Prepare), its error explained.
func (a *app) prepare(ctx context.Context, db *dbopen.DB, migrate bool) error {
	err := db.Prepare(ctx, migrate)
	if err == nil || dbopen.IsReadOnly(err) {
		return err // the schema check says so itself
	}
	// The schema check's statements, or the migration's, cut by a setting
	// of the role's: the operations say so of theirs.
	if migrate {
		return ops.ExplainMigration(err, a.role)
	}
	return ops.ExplainLimit(err, a.role)
}

// connect connects to the database the settings name, or starts the
// embedded PostgreSQL when they name none, unless --no-embedded forbids
// it: a deploy whose URL went missing would otherwise work a database of
// its own, healthy and empty, while its jobs wait in the real one.
func (a *app) connect(ctx context.Context) (*dbopen.DB, error) {
	return a.connectBy(ctx, dbopen.Connect)
}

// connectBy is connect by open: dbopen.Connect, or dbopen.Dial for pgbus
// serve, which does not wait for a server at a URL.
func (a *app) connectBy(ctx context.Context, open func(context.Context, dbopen.Options) (*dbopen.DB, error)) (*dbopen.DB, error) {
	if strings.Contains(a.databaseURL, redact.Marker) {
		// Copied from a next step, which hides the URL's secrets.
		return nil, usageError{fmt.Errorf("the database URL%s holds %s where pgbus hid a value (a password, a parameter that may hold a secret) when it printed the command: put the real value in its place, or set %s and leave --database-url out", a.from("database-url"), redact.Marker, EnvDatabaseURL)}
	}
	if a.databaseURL == "" && a.noEmbedded {
		return nil, usageError{fmt.Errorf("no database URL, and the embedded PostgreSQL is turned off%s: set %s (or %s naming a file that holds it), --database-url or the configuration file's database_url", a.from("no-embedded"), EnvDatabaseURL, EnvDatabaseURL+fileSuffix)}
	}
	// A URL read from a file (DATABASE_URL_FILE) is read again for each
	// new connection: a rotated secret is used without a restart.
	bound := a.callTimeout
	if a.connectBound > 0 && (bound == 0 || a.connectBound < bound) {
		bound = a.connectBound
	}
	db, err := open(ctx, dbopen.Options{URL: a.databaseURL, DataDir: a.dataDir, Logger: a.log, WaitFor: a.waitForDB, CallTimeout: bound, ApplicationName: a.commandPath,
		URLAgain: a.again["database-url"], URLWords: a.urlWords(), PoolInUse: a.poolInUse})
	if err != nil && strings.HasPrefix(a.sources["database-url"], "config ") && (errors.Is(err, dbopen.ErrBadURL) || strings.Contains(err.Error(), storeURLWords)) {
		// The file's URL: the error names the file, the line and the key
		// ahead of its words, as the file's other errors do.
		return nil, reworded{a.cfg.Errorf("database_url", "%v", err).Error(), err}
	}
	if err != nil && !errors.Is(err, dbopen.ErrBadURL) {
		// The store's advice on connecting says "the database URL", as a
		// Go program passes it; a person here gave it by the flag or the
		// variable. A URL that cannot be read is said to be one as it is.
		var by string
		switch a.sources["database-url"] {
		case "--database-url":
			by = "--database-url"
		case "environment variable " + EnvDatabaseURL:
			by = EnvDatabaseURL
		}
		if by != "" && strings.Contains(err.Error(), storeURLWords) {
			return nil, reworded{strings.ReplaceAll(err.Error(), storeURLWords, by), err}
		}
	}
	return db, err
}

// sourceWords names where the setting of flag name came from: the flag,
// the environment variable (or the file it names), or key of the
// configuration file.
func (a *app) sourceWords(name, key string) string {
	src := a.sources[name]
	if path, ok := strings.CutPrefix(src, "config "); ok {
		return key + " of the configuration file " + path
	}
	return src
}

// urlWords names where the database URL came from, for advice that says
// to change it: the flag, the environment variable (or the file it
// names) or the configuration file's key; "" when none gave it.
func (a *app) urlWords() string {
	src := a.sources["database-url"]
	switch {
	case src == "--database-url":
		return src
	case strings.HasPrefix(src, "environment variable "):
		return strings.TrimPrefix(src, "environment variable ")
	case strings.HasPrefix(src, "the file "):
		return src
	case strings.HasPrefix(src, "config "):
		return "database_url of " + strings.TrimPrefix(src, "config ")
	}
	return ""
}

// storeURLWords are the words the store's errors name the URL by.
const storeURLWords = "the database URL"

// embeddedTerms are the words of the embedded PostgreSQL's advice on the
// command line: the flag and variable that choose its data directory, and
// those that name a running server instead.
var embeddedTerms = embedpg.Terms{
	DataDir:    "--data-dir or " + EnvDataDir,
	Server:     "set " + EnvDatabaseURL + " (or " + EnvDatabaseURL + fileSuffix + " naming a file that holds it) / --database-url to use a running server",
	Program:    "pgbus",
	NoEmbedded: "set " + EnvNoEmbedded + "=1 (--no-embedded) so that pgbus never starts the embedded PostgreSQL and says when no database URL is given",
}

// reworded is an error said in other words than its own, which it wraps.
type reworded struct {
	msg string
	err error
}

func (r reworded) Error() string { return r.msg }
func (r reworded) Unwrap() error { return r.err }

// explain adds to an error PostgreSQL raised for lack of a privilege which
// privileges pgbus's commands need, and to an error of the schema check
// the command that migrates. An error of the embedded PostgreSQL is said
// in the command line's words (embeddedTerms) rather than a Go program's.
// An operation's error says what to do itself (the operations layer's
// schema error names migrate as a hint) and passes unchanged, as does
// every other error.
func (a *app) explain(err error) error {
	var explained *ops.Error
	if errors.As(err, &explained) {
		return err
	}
	var embedded *embedpg.Error
	if errors.As(err, &embedded) {
		return reworded{strings.Replace(err.Error(), embedded.Error(), embedded.In(embeddedTerms), 1), err}
	}
	if (errors.Is(err, dbopen.ErrSchemaMissing) || errors.Is(err, dbopen.ErrSchemaOld)) && !errors.Is(err, dbopen.ErrStandby) && !errors.Is(err, dbopen.ErrPGMQMissing) {
		// A next step, so that --json's next names it as the line does.
		h := ops.Hint{Op: ops.OpMigrate, Why: "applies the schema migrations this pgbus needs"}
		if dbopen.IsPermissionDenied(err) || dbopen.IsReadOnly(err) {
			// This role may not: the URL it connected with would be
			// refused again.
			h.Why += ", run as the role the error names, with its own database URL"
			a.otherRole()
		}
		return &ops.Error{Msg: err.Error(), Err: err, Hints: []ops.Hint{h}}
	}
	if err == nil || errors.Is(err, dbopen.ErrPermission) || !dbopen.IsPermissionDenied(err) {
		return err
	}
	who := "the database role"
	if a.role != "" {
		who += " " + a.role
	}
	return fmt.Errorf("%w; %s lacks a privilege this command needs: reading needs CONNECT on the database, USAGE on schemas pgmq and pgbus and SELECT on their tables; "+
		"dlq retry, retry-all, discard and purge, queue pause, resume and purge, send, and work and serve's workers also need INSERT, UPDATE and DELETE on those tables; "+
		"migrate, queue create and drop, and work, demo, serve, dashboard and bench while the schema is not current need the role that owns the pgbus schemas", err, who)
}

// jsonLogHandler is the handler of JSON logs at level and above, written
// to w.
func jsonLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: logAttrText})
}

// logAttrText writes a duration in a log line as its text (30s, 1.5ms),
// as the text format does: JSON wrote it in nanoseconds (probe_in
// 299998000000), beside settings written as text. It writes a time, the
// line's own among them, in UTC (2026-12-07T02:14:13.52Z), as every other
// output's, not in the process's zone.
func logAttrText(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindTime:
		a.Value = slog.TimeValue(a.Value.Time().UTC())
	}
	return a
}
