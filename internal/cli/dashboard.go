package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/mcpserver"
)

// dashboardFlags are the options of pgbus dashboard.
type dashboardFlags struct {
	addr           string
	allowedOrigins []string
	allowedHosts   []string
	authToken      string
	readOnly       bool
	allowPayloads  bool
	safeFields     []string
	trustedProxies []string
	basePath       string
	callTimeout    time.Duration
}

func (a *app) dashboardCommand() *cobra.Command {
	var f dashboardFlags
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the web dashboard alone, without an MCP endpoint",
		Long: `Serve pgbus's web dashboard at http://ADDR/, for people who want no MCP
endpoint; pgbus serve --transport http serves the same dashboard next to /mcp.

It runs under the same security as pgbus serve's HTTP transport: it binds to
127.0.0.1:8080 by default, refuses Host headers that do not name it and
Origin headers that are not allowed, and needs a token (--auth-token or
PGBUS_MCP_TOKEN, at least 32 characters) whenever --addr is not a loopback
address: the login page asks for it. Every form carries a CSRF token.
--read-only shows everything and offers no action; payloads are shown
(redacted) only with --allow-payloads. Behind a reverse proxy that forwards a
sub-path such as /pgbus/ unchanged, --base-path /pgbus serves the dashboard
there, every link, redirect and cookie under it.

For a load balancer or Kubernetes, it serves the probes of pgbus serve,
without the token and under --base-path too: /livez (200 while it serves)
and /readyz (200 while the database answers and its schema is ready, else
503); for Prometheus, /metrics behind the token: the database's gauges
(queues, DLQs, breakers, workers).

Started while the database does not answer, or on a schema it cannot use
yet (none, or older than this pgbus, for --read-only or a role that may not
migrate it), it serves at once: its pages answer 503 saying why, with
pgbus migrate to run for a schema, and to reload in a moment, and it
connects in the background, migrating the schema (--read-only: checking
it), and shows them once it is ready, without a restart. A schema a newer
pgbus migrated, which only that pgbus reads, ends it.`,
		Example: `  pgbus dashboard
  pgbus dashboard --read-only
  PGBUS_MCP_TOKEN=$(openssl rand -hex 32) pgbus dashboard --addr 0.0.0.0:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.resolve(cmd.Flags(), "trusted-proxies", "", EnvTrustedProxies); err != nil {
				return err
			}
			if err := a.resolve(cmd.Flags(), "auth-token", "", EnvAuthToken); err != nil {
				return err
			}
			if err := a.resolveBasePath(cmd.Flags(), mcpserver.TransportHTTP, &f.basePath); err != nil {
				return err
			}
			if err := a.resolveCallTimeout(cmd.Flags(), &f.callTimeout); err != nil {
				return err
			}
			return a.dashboard(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", mcpserver.DefaultAddr, "host:port to listen on; anything but loopback needs --auth-token")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origins", nil, "browser origins allowed besides the dashboard's own (comma list, scheme://host[:port], or *)")
	fl.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil, "extra Host header values accepted (comma list, host or host:port), e.g. the name a reverse proxy uses")
	addAuthTokenFlag(fl, &f.authToken, "token the login page asks for")
	fl.BoolVar(&f.readOnly, "read-only", false, "show everything and offer no action (retry, discard, restore, correct, pause, resume, run now, circuit reset, circuit open)")
	fl.BoolVar(&f.allowPayloads, "allow-payloads", false, "let message pages show payloads (redacted)")
	fl.StringSliceVar(&f.safeFields, "safe-fields", nil, "payload fields whose values message pages show even when payloads are hidden (comma list; env "+EnvSafeFields+", config safe_fields)")
	addTrustedProxiesFlag(fl, &f.trustedProxies)
	addBasePathFlag(fl, &f.basePath)
	addCallTimeoutFlag(fl, &f.callTimeout)
	return cmd
}

func (a *app) dashboard(ctx context.Context, f dashboardFlags) error {
	c := runner.MCPConfig{
		Transport: mcpserver.TransportHTTP,
		HTTP:      mcpserver.HTTPConfig{Addr: f.addr, AllowedOrigins: f.allowedOrigins, AllowedHosts: f.allowedHosts, AuthToken: f.authToken, BasePath: f.basePath},
		ReadOnly:  f.readOnly, AllowPayloads: f.allowPayloads, SafeFields: a.safeFields(f.safeFields), Logger: a.log,
		Handlers: a.queueHandlers(), DatabaseCallTimeout: f.callTimeout, CommandFlags: a.relayFlags(),
	}
	if err := c.Check(); err != nil {
		return usageError{err}
	}
	var err error
	if c.TrustedProxies, err = a.parseTrustedProxies(f.trustedProxies); err != nil {
		return err
	}
	if err := a.checkSafeFields(f.safeFields); err != nil {
		return err
	}
	// Its retries are traced as those of every other front end.
	if c.Observers, err = a.tracing(ctx, slog.LevelInfo); err != nil {
		return err
	}
	// Actions write, so the dashboard migrates as serve does; a read-only
	// one only checks the schema and writes nothing. A database that does
	// not answer yet, or whose schema cannot be readied yet (missing or
	// old for a read-only dashboard, out of the role's reach to migrate),
	// is readied in the background, as pgbus serve readies its own, while
	// the pages answer at once, saying why they cannot show anything yet
	// and what to run (runner.WhenReady).
	migrate := !f.readOnly
	a.waitForDB = longRunningWait // for the embedded PostgreSQL
	a.poolInUse = true
	ctx, sess, pending, err := a.openServing(ctx, migrate)
	if err != nil {
		return err
	}
	defer sess.Close()
	c.Gate = a.gate
	if !pending {
		return runner.ServeDashboard(ctx, sess.db.Store, c)
	}
	if sess.unready != nil {
		a.log.Warn("pgbus dashboard: the database answers, but its pgbus schema is not ready for this pgbus; serving the pages meanwhile (they say why), and trying again in the background until it is",
			"err", a.errorLine(a.explain(sess.unready), "pgbus dashboard"), "where", sess.db.Where(), "version", buildinfo.Describe())
	} else {
		msg, attrs := a.downWords("pgbus dashboard", sess, "serving the pages meanwhile (they say why)")
		a.log.Warn(msg, attrs...)
	}
	ready := func(context.Context) (func(), error) {
		a.log.Info("pgbus dashboard: database ready", "where", sess.db.Where(), "schema_version", sess.db.Status.Version, "version", buildinfo.Describe())
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failed atomic.Pointer[error]
	fail := func(err error) { failed.Store(&err); cancel() }
	stop := runner.WhenReady(ctx, sess.db, migrate, a.gate, ready, fail)
	defer stop()
	err = runner.ServeDashboard(ctx, sess.db.Store, c)
	if why := failed.Load(); why != nil {
		return *why
	}
	return err
}

// EnvTrustedProxies names the reverse proxies in front of the dashboard,
// as a comma list, when --trusted-proxies does not.
const EnvTrustedProxies = "PGBUS_TRUSTED_PROXIES"

func addTrustedProxiesFlag(fs *pflag.FlagSet, proxies *[]string) {
	fs.StringSliceVar(proxies, "trusted-proxies", nil, "addresses of the reverse proxies in front of the HTTP server (comma list of IPs or CIDRs, env "+EnvTrustedProxies+"): the dashboard's login throttle counts the client they name in X-Forwarded-For instead of the proxy, logs of refused requests name it, and their X-Forwarded-Proto: https marks the session cookie Secure")
}

// EnvBasePath is the path prefix the HTTP server is served under behind
// a reverse proxy, when --base-path does not give one.
const EnvBasePath = "PGBUS_BASE_PATH"

func addBasePathFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "base-path", "", "serve everything under this path, such as /pgbus, for a reverse proxy that forwards that path unchanged (env "+EnvBasePath+"; default: at /)")
}

// resolveBasePath settles --base-path (the flag, else PGBUS_BASE_PATH)
// and checks it for transport before anything starts, saying where a
// refused value came from.
func (a *app) resolveBasePath(fs *pflag.FlagSet, transport string, p *string) error {
	if err := a.resolve(fs, "base-path", "", EnvBasePath); err != nil {
		return err
	}
	if err := mcpserver.CheckBasePath(transport, *p); err != nil {
		return usageError{fmt.Errorf("--base-path%s: %w", a.from("base-path"), err)}
	}
	return nil
}

// parseTrustedProxies reads --trusted-proxies: IP addresses and CIDR
// prefixes. A bad one names where it came from, the flag or the
// environment.
func (a *app) parseTrustedProxies(values []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(values))
	for _, v := range values {
		v = strings.TrimSpace(v)
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(v)
		if err != nil {
			return nil, usageError{fmt.Errorf("--trusted-proxies%s: %q is not an IP address or CIDR prefix: give IP addresses or CIDR prefixes such as 10.0.0.0/8 or fd00::/8, separated by commas", a.from("trusted-proxies"), clip(v, 60))}
		}
		addr = addr.Unmap()
		out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return out, nil
}
