package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// serveFlags are the options of pgbus serve.
type serveFlags struct {
	transport      string
	addr           string
	allowedOrigins []string
	allowedHosts   []string
	authToken      string
	maxSessions    int
	idleTimeout    time.Duration
	readOnly       bool
	noWorkers      bool
	allowPayloads  bool
	safeFields     []string
	queues         []string
	work           []string // the old name of --queue
	handler        string
	concurrency    int
	metricsAddr    string
	timing         workerTiming // of the embedded workers
	trustedProxies []string
	basePath       string
}

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the MCP server for AI agents (stdio, Streamable HTTP or SSE), next to embedded workers",
		Long: `Serve pgbus's MCP tools, resources and prompts to AI agents.

Transports:
  stdio  (default) JSON-RPC on stdin/stdout, for clients that start pgbus
         themselves (Claude Desktop, Claude Code, VS Code, Cursor). Logs go to
         stderr only. The server stops when the client closes stdin.
  http   Streamable HTTP at http://ADDR/mcp, and the web dashboard at
         http://ADDR/ (a login page asks for the token when one is set);
         with --base-path /pgbus, at /pgbus/mcp and /pgbus/, for a reverse
         proxy that forwards /pgbus/ unchanged.
  sse    the legacy HTTP+SSE transport: GET http://ADDR/sse, POST /message.

HTTP binds to 127.0.0.1:8080 by default. Requests with an Origin header that is
not allowed are refused (403), as are Host headers that do not name this
server. A bearer token (--auth-token or PGBUS_MCP_TOKEN) is required whenever
--addr is not a loopback address, and then must be at least 32 characters (use
a random one, e.g. openssl rand -hex 32); when set, every request must send
"Authorization: Bearer <token>". A request body must arrive within 30 seconds
of its headers, or it gets 408 and the connection is closed.

The server runs at most twice as many tool calls at once as its database
pool has connections (pool_max_conns in the database URL; by default one a
CPU, 4 to 10), and at least 8, for all its clients and transports together:
a call beyond them waits for one to end, at most 10 seconds, then is
answered a tool error (kind unavailable) saying the server is busy and to
call again. A call waiting for its user's answer holds no place meanwhile.

Payloads of messages are hidden unless --allow-payloads is given and the call
asks for them; secrets under keys like password or token stay redacted.
--read-only leaves out the write tools:
` + wrapList(tools.WriteNames(), "  ", 78) + `.
Without embedded workers it also leaves the schema alone: it checks that
pgbus migrate has run instead of migrating, and writes nothing, so a database
role that may only read can serve it.

Started while the database does not answer, or while its schema cannot be
readied (not migrated yet for --read-only, or by a role that may not
migrate it), serve still answers agents at once: pgbus_health and the
tools say why and what to run, and serve tries again in the background
until the database is ready, then starts its workers.

A command the server names for an operator to run (a write on a read-only
server, a migration, a worker to start) carries the --config, --data-dir and
--database-url the server runs with, from flags or the environment (paths
absolute, the URL's password redacted): copied, it reaches the same database.

Embedded workers work the queues named by --queue NAME[:N] (with --handler),
or PGBUS_QUEUES (with PGBUS_HANDLER), or else the queues of the configuration
file with their handlers, exactly as pgbus work does, with the same
--concurrency, --poll-interval, --drain-timeout and --no-listen; with none of
them, serve runs no workers and only answers agents. --no-workers runs none
whatever the configuration file and PGBUS_QUEUES name: an agents' server that
shares the workers' configuration file (its safe_fields, say) on a machine
that does not run their handlers, or with a role that may only read.

Monitoring: over http and sse the same address serves Prometheus metrics at
/metrics (with the bearer token, when one is set) and the probes /livez and
/readyz (without it; /readyz answers 503 while the database does not answer or
a queue the embedded workers work is STALLED, and once they stopped on an
error, which pgbus_health reports too: they are not started again until serve
restarts). --metrics-addr serves the three on a port of their own, over any
transport, stdio included.`,
		Example: `  pgbus serve
  pgbus serve --read-only
  pgbus serve --read-only --no-workers --config pgbus.yaml
  pgbus serve --transport http --addr 127.0.0.1:8080
  PGBUS_MCP_TOKEN=$(openssl rand -hex 32) pgbus serve --transport http --addr 0.0.0.0:8080
  claude mcp add pgbus -- pgbus serve`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Empty, --handler would fall back to the file's handlers.
			if err := a.resolveMetricsAddr(cmd.Flags(), &f.metricsAddr); err != nil {
				return err
			}
			if err := a.resolveTiming(cmd.Flags(), &f.timing); err != nil {
				return err
			}
			if err := a.resolve(cmd.Flags(), "trusted-proxies", "", EnvTrustedProxies); err != nil {
				return err
			}
			if err := a.resolve(cmd.Flags(), "max-sessions", "", EnvMaxSessions); err != nil {
				return err
			}
			if err := a.resolve(cmd.Flags(), "auth-token", "", EnvAuthToken); err != nil {
				return err
			}
			if err := a.resolveBasePath(cmd.Flags(), f.transport, &f.basePath); err != nil {
				return err
			}
			if f.maxSessions < 1 {
				return usageError{fmt.Errorf("--max-sessions %d%s: give 1 or more", f.maxSessions, a.from("max-sessions"))}
			}
			if f.maxSessions > mcpserver.MaxMaxSessions && a.from("max-sessions") != "" {
				// mcpserver's refusal names the flag alone.
				return usageError{fmt.Errorf("--max-sessions %d%s is more than %d: each open session keeps memory until it ends or --session-idle-timeout passes idle; use %d or less", f.maxSessions, a.from("max-sessions"), mcpserver.MaxMaxSessions, mcpserver.MaxMaxSessions)}
			}
			if f.idleTimeout < mcpserver.MinSessionIdleTimeout {
				return usageError{fmt.Errorf("--session-idle-timeout %s: give %s or more", f.idleTimeout, mcpserver.MinSessionIdleTimeout)}
			}
			concurrency, err := a.resolveConcurrency(cmd.Flags(), &f.concurrency)
			if err != nil {
				return err
			}
			f.concurrency = concurrency
			return a.serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.transport, "transport", mcpserver.TransportStdio, "MCP transport: stdio, http (Streamable HTTP at /mcp) or sse (legacy, /sse and /message)")
	fl.StringVar(&f.addr, "addr", mcpserver.DefaultAddr, "host:port the http and sse transports listen on; anything but loopback needs --auth-token")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origins", nil, "browser origins allowed to call the HTTP transports (comma list, scheme://host[:port], or *); loopback origins pass the Origin check when bound to loopback, but a browser client needs its origin listed here for CORS")
	fl.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil, "extra Host header values the HTTP transports accept (comma list, host or host:port), e.g. the name a reverse proxy uses")
	addAuthTokenFlag(fl, &f.authToken, "bearer token HTTP clients must send")
	fl.IntVar(&f.maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "MCP sessions (Streamable HTTP) or event streams (SSE) kept open at once; past them, a new session ends the one idle the longest without an event stream or request under way, and a new one that finds none, or a new event stream, gets 503 with Retry-After (env "+EnvMaxSessions+")")
	fl.DurationVar(&f.idleTimeout, "session-idle-timeout", mcpserver.DefaultSessionIdleTimeout, "end a Streamable HTTP session after this long without a request (looked for every half of it, so an idle session lasts up to one and a half times it); 1s or more")
	fl.BoolVar(&f.readOnly, "read-only", false, "serve only the read tools: the write tools ("+strings.Join(tools.WriteNames(), ", ")+") are not listed, and a call to one changes nothing and names the command to run instead")
	fl.BoolVar(&f.allowPayloads, "allow-payloads", false, "let tools and resources show message payloads (redacted) when a call asks for them")
	fl.StringSliceVar(&f.safeFields, "safe-fields", nil, "payload fields whose values tools show even when payloads are hidden, keys joined by dots (comma list: tenant,plan,file.type; env "+EnvSafeFields+", config safe_fields); secrets stay redacted")
	fl.StringArrayVar(&f.queues, "queue", nil, "run embedded workers on this queue, NAME or NAME:CONCURRENCY (repeatable; env "+EnvQueues+" as a comma list; default: the config file's queues)")
	fl.StringArrayVar(&f.work, "work", nil, "the old name of --queue")
	fl.BoolVar(&f.noWorkers, "no-workers", false, "run no embedded workers, whatever --queue, "+EnvQueues+" or the configuration file name: only answer agents")
	// Hidden rather than marked deprecated: cobra prints a deprecation on
	// stdout, which on stdio is the MCP protocol's. serveQueues warns in the
	// log instead.
	_ = fl.MarkHidden("work")
	addMetricsFlag(fl, &f.metricsAddr)
	addTrustedProxiesFlag(fl, &f.trustedProxies)
	addBasePathFlag(fl, &f.basePath)
	f.timing.add(fl)
	fl.StringVar(&f.handler, "handler", "", "handler type for the --queue queues: "+strings.Join(handlers.Types(), ", ")+" (env "+EnvHandler+"; default: each queue's handler in the config file)")
	addConcurrencyFlag(fl, &f.concurrency)
	return cmd
}

// mcpConfig is how serve serves agents, as the flags say.
func (a *app) mcpConfig(f serveFlags) runner.MCPConfig {
	return runner.MCPConfig{
		Transport: f.transport,
		HTTP:      mcpserver.HTTPConfig{Addr: f.addr, AllowedOrigins: f.allowedOrigins, AllowedHosts: f.allowedHosts, AuthToken: f.authToken, MaxSessions: f.maxSessions, SessionIdleTimeout: f.idleTimeout, BasePath: f.basePath},
		ReadOnly:  f.readOnly, AllowPayloads: f.allowPayloads, SafeFields: a.safeFields(f.safeFields),
		Stdin: a.stdin, Stdout: a.stdout, Logger: a.log, Handlers: a.queueHandlers(), DatabaseCallTimeout: f.timing.callTimeout,
		CommandFlags: a.relayFlags(),
	}
}

// serveQueues settles the queues of serve's embedded workers as pgbus work
// does: --queue, else PGBUS_QUEUES, else the configuration file's; the
// handler from --handler, else PGBUS_HANDLER, else the file's.
func (a *app) serveQueues(f serveFlags) ([]config.WorkQueue, error) {
	if f.noWorkers {
		if len(f.queues)+len(f.work) > 0 || f.handler != "" {
			return nil, usageError{errors.New("--no-workers runs no worker, so --queue and --handler have nothing to do: give one or the other")}
		}
		return nil, nil
	}
	if len(f.work) > 0 {
		a.log.Warn("pgbus serve: --work is deprecated; use --queue, as pgbus work does")
	}
	specs, source, err := a.queueSpecs(append(f.queues, f.work...))
	if err != nil {
		return nil, err
	}
	plan := config.WorkPlan{Specs: specs, Source: source, Handler: f.handler, Concurrency: f.concurrency}
	if plan.Handler == "" {
		if err := setButEmpty(EnvHandler); err != nil {
			return nil, err
		}
		if plan.Handler = os.Getenv(EnvHandler); plan.Handler != "" {
			plan.HandlerFrom = " (from environment variable " + EnvHandler + ")"
		}
	}
	if len(specs) == 0 && len(a.cfg.Queues) == 0 {
		return nil, nil
	}
	queues, err := a.cfg.WorkQueues(plan)
	if err != nil && len(specs) == 0 {
		// Whoever meant only to serve (a read-only server on a machine
		// that lacks a handler's program) learns why a handler matters.
		return nil, usageError{fmt.Errorf("%w (pgbus serve runs workers on the configuration file's queues, unless --queue or %s names others; --no-workers runs none)", err, EnvQueues)}
	}
	if err != nil {
		return nil, usageError{err}
	}
	return queues, nil
}

func (a *app) serve(ctx context.Context, f serveFlags) error {
	// Every check of the command line comes before the database starts.
	mcp := a.mcpConfig(f)
	if err := mcp.Check(); err != nil {
		return usageError{err}
	}
	var err error
	if mcp.TrustedProxies, err = a.parseTrustedProxies(f.trustedProxies); err != nil {
		return err
	}
	queues, err := a.serveQueues(f)
	if err != nil {
		return err
	}
	if len(queues) > 0 {
		if err := a.alertsReady(); err != nil {
			return err
		}
	}
	if err := a.checkSafeFields(f.safeFields); err != nil {
		return err
	}
	observers, err := a.tracing(ctx, slog.LevelInfo)
	if err != nil {
		return err
	}
	mcp.Observers = observers

	// Workers create their queues and write, so serve migrates as pgbus
	// work does; a read-only server without workers only checks the schema
	// and writes nothing, so a role that may only read can run it. A
	// database that does not answer yet, or whose schema cannot be
	// readied yet (missing or old for a read-only server, out of the
	// role's reach to migrate), is readied in the background, while the
	// server answers agents at once, saying why (runner.WhenReady): an
	// MCP client sees nothing of an exit but its transport closing.
	migrate := !f.readOnly || len(queues) > 0
	a.waitForDB = longRunningWait // for the embedded PostgreSQL
	a.poolInUse = true
	a.ownWorkers = &ops.OwnWorkers{}
	mcp.OwnWorkers = a.ownWorkers
	ctx, sess, pending, err := a.openServing(ctx, migrate)
	if err != nil {
		return err
	}
	defer sess.Close()
	mcp.Gate = a.gate
	// The embedded workers' records (jobs done and failed at debug, their
	// troubles at warn) also reach the MCP clients that set a log level.
	mcp.ClientLog = mcpserver.NewClientLog()
	mon, stopMonitor, err := a.startMonitor(ctx, sess.ops, f.metricsAddr, f.transport != mcpserver.TransportStdio, queues)
	if err != nil {
		return err
	}
	defer stopMonitor()
	mcp.Monitor = mon
	// What needs the database: its workers and alerts.
	start := func(ctx context.Context) (stop func(), err error) {
		a.log.Info("pgbus serve: database ready", "where", sess.db.Where(), "schema_version", sess.db.Status.Version, "version", buildinfo.Describe())
		stopWorkers, err := runner.Background(ctx, sess.db.Store, sess.ops, queues, a.engineConfig(f.timing), mcp.ClientLog.Tee(a.log), mon, slices.Concat(observers, mon.Observers())...)
		if err != nil {
			return nil, err
		}
		stopAlerts := func() {}
		if len(queues) > 0 {
			if stopAlerts, err = runner.StartAlerts(ctx, sess.db.Store, sess.ops, a.cfg.Alerts, mcp.ClientLog.Tee(a.log)); err != nil {
				stopWorkers()
				return nil, err
			}
		}
		return func() { stopAlerts(); stopWorkers() }, nil
	}
	if !pending {
		stop, err := start(ctx)
		if err != nil {
			return err
		}
		defer stop()
		return runner.ServeMCP(ctx, sess.db.Store, mcp)
	}
	if sess.unready != nil {
		a.log.Warn("pgbus serve: the database answers, but its pgbus schema is not ready for this pgbus; serving agents meanwhile (pgbus_health and the tools say why), and trying again in the background until it is",
			"err", a.errorLine(a.explain(sess.unready), "pgbus serve"), "where", sess.db.Where(), "version", buildinfo.Describe())
	} else {
		msg, attrs := a.downWords("pgbus serve", sess, "serving agents meanwhile (pgbus_health says why)")
		a.log.Warn(msg, attrs...)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failed atomic.Pointer[error]
	fail := func(err error) { failed.Store(&err); cancel() }
	stop := runner.WhenReady(ctx, sess.db, migrate, a.gate, start, fail)
	defer stop()
	err = runner.ServeMCP(ctx, sess.db.Store, mcp)
	if why := failed.Load(); why != nil {
		return *why // what start failed at, once the database answered
	}
	return err
}

// EnvAuthToken is the token of the HTTP transports and the dashboard when
// --auth-token does not give one. The environment is the better place for
// it: a flag shows in the process list.
const EnvAuthToken = "PGBUS_MCP_TOKEN"

// addAuthTokenFlag adds --auth-token. Its default stays empty and the
// environment is read when the command runs, so that --help never prints
// the token.
func addAuthTokenFlag(fs *pflag.FlagSet, token *string, what string) {
	fs.StringVar(token, "auth-token", "", what+" (env "+EnvAuthToken+", or a file named by "+EnvAuthToken+fileSuffix+": they keep it out of the process list), without white space; required when --addr is not loopback, and then at least 32 characters")
}

// EnvMaxSessions bounds the MCP sessions (Streamable HTTP) or event streams
// (SSE) open at once, when --max-sessions does not.
const EnvMaxSessions = "PGBUS_MCP_MAX_SESSIONS"

// EnvSafeFields names the safe payload fields, as a comma list, when
// --safe-fields does not.
const EnvSafeFields = "PGBUS_SAFE_FIELDS"

// safeFields settles the safe payload fields: given (--safe-fields), else
// PGBUS_SAFE_FIELDS, else the configuration file's safe_fields.
func (a *app) safeFields(given []string) []string {
	if len(given) > 0 {
		return given
	}
	if v := os.Getenv(EnvSafeFields); v != "" {
		return strings.Split(v, ",")
	}
	return a.cfg.SafeFields
}

// checkSafeFields checks the safe payload fields safeFields settles from
// given, naming where a bad one came from: --safe-fields, the environment
// or the configuration file.
func (a *app) checkSafeFields(given []string) error {
	if len(given) == 0 {
		if err := setButEmpty(EnvSafeFields); err != nil {
			return err
		}
	}
	err := ops.CheckSafeFields(a.safeFields(given))
	switch {
	case err == nil:
		return nil
	case len(given) > 0:
		return usageError{fmt.Errorf("--safe-fields: %w", err)}
	case os.Getenv(EnvSafeFields) != "":
		return usageError{fmt.Errorf("safe fields (from environment variable %s): %w", EnvSafeFields, err)}
	}
	return usageError{fmt.Errorf("safe fields (from config %s): %w", a.cfg.Path(), err)}
}

// wrapList writes items as a comma list in lines of at most width
// characters, each after indent, for a help text's paragraph.
func wrapList(items []string, indent string, width int) string {
	var b strings.Builder
	line := indent
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if line != indent && len(line)+1+len(it) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += it
	}
	return b.String() + line
}
