package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/tools"
)

// serveFlags are the options of pgbus serve.
type serveFlags struct {
	transport      string
	addr           string
	allowedOrigins []string
	allowedHosts   []string
	authToken      string
	readOnly       bool
	allowPayloads  bool
	work           []string
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
  http   Streamable HTTP at http://ADDR/mcp.
  sse    the legacy HTTP+SSE transport: GET http://ADDR/sse, POST /message.

HTTP binds to 127.0.0.1:8080 by default. Requests with an Origin header that is
not allowed are refused (403), as are Host headers that do not name this
server. A bearer token (--auth-token or PGBUS_MCP_TOKEN) is required whenever
--addr is not a loopback address; when set, every request must send
"Authorization: Bearer <token>".

Payloads of messages are hidden unless --allow-payloads is given and the call
asks for them; secrets under keys like password or token stay redacted.
--read-only leaves out the write tools (retry, discard, purge, pause, resume,
circuit reset).

--work runs embedded workers on the queues named. No handlers are registered
in this binary yet: a worked queue's messages find no handler for their kind
and are dead-lettered. Leave --work out unless handlers are registered.`,
		Example: `  pgbus serve
  pgbus serve --read-only
  pgbus serve --transport http --addr 127.0.0.1:8080
  PGBUS_MCP_TOKEN=$(openssl rand -hex 32) pgbus serve --transport http --addr 0.0.0.0:8080
  claude mcp add pgbus -- pgbus serve`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.transport, "transport", mcpserver.TransportStdio, "MCP transport: stdio, http (Streamable HTTP at /mcp) or sse (legacy, /sse and /message)")
	fl.StringVar(&f.addr, "addr", mcpserver.DefaultAddr, "host:port the http and sse transports listen on; anything but loopback needs --auth-token")
	fl.StringSliceVar(&f.allowedOrigins, "allowed-origins", nil, "browser origins allowed to call the HTTP transports (comma list, scheme://host[:port], or *); loopback origins are allowed when bound to loopback")
	fl.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil, "extra Host header values the HTTP transports accept (comma list, host or host:port), e.g. the name a reverse proxy uses")
	fl.StringVar(&f.authToken, "auth-token", os.Getenv("PGBUS_MCP_TOKEN"), "bearer token HTTP clients must send (env PGBUS_MCP_TOKEN); required when --addr is not loopback")
	fl.BoolVar(&f.readOnly, "read-only", false, "serve only the read tools: the write tools (retry, discard, purge, pause, resume, circuit reset) are neither listed nor callable")
	fl.BoolVar(&f.allowPayloads, "allow-payloads", false, "let tools and resources show message payloads (redacted) when a call asks for them")
	fl.StringArrayVar(&f.work, "work", nil, "run embedded workers on queue[:concurrency] (repeatable); WARNING: no handlers are registered in this binary yet, so a worked queue's messages are dead-lettered")
	return cmd
}

// serveWork parses the --work values.
func parseWork(values []string) ([]engine.QueueConfig, error) {
	var out []engine.QueueConfig
	for _, v := range values {
		name, conc, hasConc := strings.Cut(strings.TrimSpace(v), ":")
		q := engine.QueueConfig{Name: name}
		if hasConc {
			n, err := strconv.Atoi(conc)
			if err != nil || n < 1 || n > engine.MaxConcurrency {
				return nil, fmt.Errorf("--work %q: concurrency must be a whole number from 1 to %d, as in --work %s:10", v, engine.MaxConcurrency, name)
			}
			q.Concurrency = n
		}
		out = append(out, q)
	}
	return out, nil
}

func (f serveFlags) httpConfig(a *app) mcpserver.HTTPConfig {
	return mcpserver.HTTPConfig{
		Transport:      f.transport,
		Addr:           f.addr,
		AllowedOrigins: f.allowedOrigins,
		AllowedHosts:   f.allowedHosts,
		AuthToken:      f.authToken,
		Logger:         a.log,
		Ready: func(addr net.Addr) {
			path := mcpserver.PathMCP
			if f.transport == mcpserver.TransportSSE {
				path = mcpserver.PathSSE
			}
			a.log.Info("pgbus MCP server listening", "transport", f.transport, "addr", addr.String(),
				"url", "http://"+addr.String()+path, "auth", f.authToken != "", "read_only", f.readOnly)
		},
	}
}

func (a *app) serve(ctx context.Context, f serveFlags) error {
	// Every check of the command line comes before the database starts.
	switch f.transport {
	case mcpserver.TransportStdio:
	case mcpserver.TransportHTTP, mcpserver.TransportSSE:
		if err := f.httpConfig(a).Check(); err != nil {
			return usageError{err}
		}
	default:
		return usageError{fmt.Errorf("--transport %q: use stdio, http or sse", f.transport)}
	}
	queues, err := parseWork(f.work)
	if err != nil {
		return usageError{err}
	}
	var client *engine.Client
	if len(queues) > 0 {
		// Validates the queue names and concurrencies.
		if client, err = engine.NewClient(nil, engine.Config{Queues: queues}); err != nil {
			return usageError{err}
		}
	}

	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	a.log.Info("pgbus serve: database ready", "where", db.Where(), "schema_version", db.Status.Version)

	var workers sync.WaitGroup
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		stopWork()
		workers.Wait()
	}()
	if client != nil {
		if client, err = engine.NewClient(db.Store, engine.Config{Queues: queues, Logger: a.log}); err != nil {
			return usageError{err}
		}
		a.log.Warn("pgbus serve: embedded workers run with no handlers registered; messages of the worked queues will be dead-lettered", "queues", f.work)
		workers.Go(func() {
			if err := client.Run(workCtx); err != nil && !errors.Is(err, context.Canceled) {
				a.log.Error("pgbus serve: embedded workers stopped", "err", err)
			}
		})
	}

	deps := tools.Deps{
		DLQ:           engine.NewDLQ(db.Store),
		Admin:         engine.NewAdmin(db.Store),
		AllowPayloads: f.allowPayloads,
		ReadOnly:      f.readOnly,
	}
	s := mcpserver.New(deps, mcpserver.Options{Logger: a.log})
	if f.transport == mcpserver.TransportStdio {
		a.log.Info("pgbus MCP server on stdio", "read_only", f.readOnly, "allow_payloads", f.allowPayloads)
		err = mcpserver.ServeStdio(ctx, s, a.stdin, a.stdout, a.log)
	} else {
		err = mcpserver.ServeHTTP(ctx, s, f.httpConfig(a))
	}
	a.log.Info("pgbus MCP server stopped")
	return err
}
