package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
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
	handler        string
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
circuit reset). Without embedded workers it also leaves the schema alone: it
checks that pgbus migrate has run instead of migrating, and writes nothing, so
a database role that may only read can serve it.

Embedded workers work the queues named by --work (with --handler), or else
the queues of the configuration file with their handlers, as pgbus work does;
with neither, serve runs no workers and only answers agents.`,
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
	fl.StringArrayVar(&f.work, "work", nil, "run embedded workers on NAME or NAME:CONCURRENCY (repeatable; default: the config file's queues)")
	fl.StringVar(&f.handler, "handler", "", "handler type for the --work queues: "+strings.Join(handlers.Types(), ", ")+" (default: each queue's handler in the config file)")
	return cmd
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
	var queues []workQueue
	if len(f.work) > 0 || len(a.cfg.Queues) > 0 {
		var err error
		if queues, err = a.workQueues(f.work, "--work", &workFlags{handler: f.handler}); err != nil {
			return err
		}
	}

	// Workers create their queues and write, so serve migrates as pgbus
	// work does; a read-only server without workers only checks the schema
	// and writes nothing, so a role that may only read can run it.
	open := a.openDatabase
	if f.readOnly && len(queues) == 0 {
		open = a.openChecked
	}
	db, err := open(ctx)
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
	if len(queues) > 0 {
		if err := a.prepareQueues(ctx, db, queues); err != nil {
			return err
		}
		client, err := a.newWorkers(db, queues, engine.Config{})
		if err != nil {
			return err
		}
		a.log.Info("pgbus serve: embedded workers", "queues", len(queues), "worker", client.ID())
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
