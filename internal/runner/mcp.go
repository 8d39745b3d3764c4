package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/basepath"
	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

// MCPConfig is how pgbus serve serves agents.
type MCPConfig struct {
	// Transport is mcpserver.TransportStdio, TransportHTTP or TransportSSE.
	Transport string
	// HTTP configures the HTTP transports; its Transport and Logger are
	// filled in, its Ready is called once it listens, and with
	// TransportHTTP its Dashboard is the dashboard over the same service.
	HTTP mcpserver.HTTPConfig
	// ReadOnly leaves out the write tools; AllowPayloads lets calls ask for
	// message payloads.
	ReadOnly, AllowPayloads bool
	// SafeFields are payload fields shown even when payloads are hidden.
	SafeFields []string
	// TrustedProxies are the reverse proxies in front of the HTTP server,
	// whose X-Forwarded-For names the client the dashboard's login
	// throttle counts and refusal logs name.
	TrustedProxies []netip.Prefix
	// Stdin and Stdout carry the stdio transport.
	Stdin  io.Reader
	Stdout io.Writer
	Logger *slog.Logger
	// ClientLog, when set, forwards the server's records to the clients
	// that set a log level; records logged through ClientLog.Tee elsewhere
	// (the embedded workers) reach them too.
	ClientLog *mcpserver.ClientLog
	// Observers watch what agents send and what they and the dashboard
	// retry out of DLQs, for traces (see Tracing). None by default.
	Observers []engine.Observer
	// Handlers are the handlers queues are known to run with, for the
	// next steps that start a worker (ops.Options.Handlers).
	Handlers map[string]string
	// DatabaseCallTimeout bounds the database work of each tool call,
	// resource read and page (ops.Options.DatabaseCallTimeout); zero for
	// its default.
	DatabaseCallTimeout time.Duration
	// Gate, when set, holds the calls of the server's operations layer
	// while the process readies its database (WhenReady).
	Gate *ops.Gate
	// OwnWorkers, when set, is the state of the workers the process runs
	// beside the server (Background), whose stop on an error the server's
	// health verdict reports.
	OwnWorkers *ops.OwnWorkers
	// CommandFlags are the global flags the commands the server names for
	// an operator to run carry, each as " --name value" (tools.Deps,
	// dashboard.Config).
	CommandFlags string
	// Monitor, when set, counts the tool calls; over HTTP its metrics
	// are served at /metrics and its probes at /livez and /readyz.
	Monitor *Monitor
}

// Check checks the transport and its HTTP settings, before anything
// starts.
func (c MCPConfig) Check() error {
	switch c.Transport {
	case mcpserver.TransportStdio:
		return nil
	case mcpserver.TransportHTTP, mcpserver.TransportSSE:
		return c.http().Check()
	}
	return fmt.Errorf("--transport %q: use stdio, http or sse", c.Transport)
}

// http is the HTTP configuration, logging the address once listening
// (and calling HTTP.Ready, when set).
func (c MCPConfig) http() mcpserver.HTTPConfig {
	h := c.HTTP
	h.Transport, h.Logger, h.TrustedProxies = c.Transport, c.Logger, c.TrustedProxies
	h.Ready = func(addr net.Addr) {
		if c.HTTP.Ready != nil {
			c.HTTP.Ready(addr)
		}
		base := c.basePath()
		path := base + mcpserver.PathMCP
		if c.Transport == mcpserver.TransportSSE {
			path = mcpserver.PathSSE
		}
		c.Logger.Info("pgbus MCP server listening", "transport", c.Transport, "addr", addr.String(),
			"url", "http://"+addr.String()+path, "auth", h.AuthToken != "", "read_only", c.ReadOnly)
		if h.Dashboard != nil {
			c.Logger.Info("pgbus dashboard listening", "url", "http://"+addr.String()+base+"/")
		}
	}
	return h
}

// ServeMCP serves pgbus's MCP server over st until ctx ends or, on stdio,
// the client closes stdin. Agents get the default bounds, and the payload
// gate and read-only mode of c.
func ServeMCP(ctx context.Context, st *store.Store, c MCPConfig) error {
	if c.ClientLog == nil {
		c.ClientLog = mcpserver.NewClientLog()
	}
	svc, err := ops.New(st, ops.Options{AllowPayloads: c.AllowPayloads, SafeFields: c.SafeFields, ReadOnly: c.ReadOnly, Logger: c.ClientLog.Tee(c.Logger),
		Observers: c.Observers, Handlers: c.Handlers, DatabaseCallTimeout: c.DatabaseCallTimeout, Gate: c.Gate, OwnWorkers: c.OwnWorkers})
	if err != nil {
		return err
	}
	defer closeService(svc)
	if c.Gate.Ready() {
		warnOnStandby(ctx, st, c, "write tools")
	}
	if c.Transport == mcpserver.TransportHTTP {
		// The dashboard shares the tools' service: the same operations,
		// views and redaction, at / next to /mcp.
		if c.HTTP.Dashboard, err = dashboard.New(svc, dashboard.Config{AuthToken: c.HTTP.AuthToken, SecureCookies: !loopbackAddr(c.HTTP.Addr), TrustedProxies: c.TrustedProxies, Logger: c.Logger,
			MCP: c.basePath() + mcpserver.PathMCP, BasePath: c.HTTP.BasePath, CommandFlags: c.CommandFlags}); err != nil {
			return err
		}
	}
	opts := mcpserver.Options{Logger: c.Logger, ClientLog: c.ClientLog}
	if c.Monitor != nil {
		opts.ToolCalled = c.Monitor.Metrics.ToolCalled
		c.HTTP.Metrics, c.HTTP.Probes = c.Monitor.MetricsHandler(), c.Monitor.ProbesHandler()
		c.HTTP.Watch = c.Monitor.Metrics.WatchMCP
	}
	s, err := mcpserver.New(tools.Deps{Ops: svc, CommandFlags: c.CommandFlags}, opts)
	if err != nil {
		return err
	}
	if c.Transport == mcpserver.TransportStdio {
		c.Logger.Info("pgbus MCP server on stdio", "read_only", c.ReadOnly, "allow_payloads", c.AllowPayloads)
		err = mcpserver.ServeStdio(ctx, s, c.Stdin, c.Stdout, c.Logger)
	} else {
		err = mcpserver.ServeHTTP(ctx, s, c.http())
	}
	c.Logger.Info("pgbus MCP server stopped")
	return err
}

// warnOnStandby tells the log, on start, that the database is a standby
// while the server offers writes (what): each would fail when used.
func warnOnStandby(ctx context.Context, st *store.Store, c MCPConfig, what string) {
	if c.ReadOnly {
		return
	}
	if r, err := st.ReplicaState(ctx); err == nil && r.Standby {
		c.Logger.Warn("pgbus: the database is a standby (a read replica), which takes no writes: the " + what + " will fail; " +
			"serve it with --read-only, or point DATABASE_URL at the primary")
	}
}

// basePath is the base path of c.HTTP, cleaned (a value Check refuses
// gives none: nothing is served with it).
func (c MCPConfig) basePath() string {
	base, _ := basepath.Clean(c.HTTP.BasePath)
	return base
}

// loopbackAddr reports whether addr (host:port; the default when empty)
// listens on loopback only.
func loopbackAddr(addr string) bool {
	if addr == "" {
		addr = mcpserver.DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	return err == nil && mcpserver.IsLoopbackHost(host)
}

// ServeDashboard serves the web dashboard alone (no MCP endpoint) over st
// on c.HTTP's address, under the HTTP transport's security, until ctx
// ends, with the payload gate, read-only mode and observers of c, and the
// probes /livez and /readyz beside it, under its base path. While c.Gate
// holds calls (WhenReady), its pages answer 503 saying why, and /readyz
// answers 503.
func ServeDashboard(ctx context.Context, st *store.Store, c MCPConfig) error {
	c.Transport = mcpserver.TransportHTTP
	svc, err := ops.New(st, ops.Options{AllowPayloads: c.AllowPayloads, SafeFields: c.SafeFields, ReadOnly: c.ReadOnly, Logger: c.Logger,
		Observers: c.Observers, Handlers: c.Handlers, DatabaseCallTimeout: c.DatabaseCallTimeout, Gate: c.Gate, OwnWorkers: c.OwnWorkers})
	if err != nil {
		return err
	}
	defer closeService(svc)
	if c.Gate.Ready() {
		warnOnStandby(ctx, st, c, "dashboard's buttons that retry, discard or pause")
	}
	h := c.HTTP
	h.Transport, h.Logger, h.TrustedProxies = c.Transport, c.Logger, c.TrustedProxies
	// The probes and metrics of pgbus serve, for a load balancer,
	// Kubernetes or Prometheus in front of the dashboard: it works no
	// queue, so it is ready while the database answers, and its metrics
	// are the database's gauges (queues, DLQs, breakers, workers).
	mon := NewMonitor(svc, c.Logger, nil)
	h.Probes, h.Metrics = mon.ProbesHandler(), mon.MetricsHandler()
	if h.Dashboard, err = dashboard.New(svc, dashboard.Config{AuthToken: h.AuthToken, SecureCookies: !loopbackAddr(h.Addr), TrustedProxies: c.TrustedProxies, Logger: c.Logger,
		BasePath: h.BasePath, CommandFlags: c.CommandFlags}); err != nil {
		return err
	}
	ready := h.Ready
	h.Ready = func(addr net.Addr) {
		c.Logger.Info("pgbus dashboard listening", "url", "http://"+addr.String()+c.basePath()+"/", "auth", h.AuthToken != "", "read_only", c.ReadOnly, "version", buildinfo.Describe())
		if ready != nil {
			ready(addr)
		}
	}
	if err := h.Check(); err != nil {
		return err
	}
	addr := h.Addr
	if addr == "" {
		addr = mcpserver.DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %v; choose another --addr or stop what uses it", addr, err) // %v: a listener refused is no database that does not answer
	}
	err = mcpserver.ServeDashboard(ctx, ln, h)
	c.Logger.Info("pgbus dashboard stopped")
	return err
}

// serviceCloseWait bounds how long a server that stops keeps trying to
// write the audit entries its service holds: within the grace a
// supervisor gives a stopping process before it kills it.
const serviceCloseWait = 10 * time.Second

// closeService writes the audit entries svc holds, for at most
// serviceCloseWait; those it cannot write go to the log.
func closeService(svc *ops.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), serviceCloseWait)
	defer cancel()
	svc.Close(ctx)
}
