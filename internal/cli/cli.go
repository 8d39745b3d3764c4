// Package cli implements the pgbus command line: subcommands, flags, and the
// wiring from them to store and engine.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Exit codes, part of the CLI's contract with scripts.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitUsage    = 2
	ExitNotFound = 3
)

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the command line and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := app.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := app.explain(root.ExecuteContext(ctx))
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "pgbus: %s\n", errorLine(err))
	return exitCode(err)
}

func exitCode(err error) int {
	var usage usageError
	switch {
	case errors.As(err, &usage), errors.Is(err, store.ErrInvalid), errors.Is(err, ops.ErrReadOnly), isCobraUsage(err):
		return ExitUsage
	case errors.Is(err, store.ErrNotFound):
		return ExitNotFound
	default:
		return ExitFailure
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pgbus",
		Short: "Dead-letter and retry engine on PostgreSQL, with an MCP server for AI agents",
		Long: `pgbus runs background jobs from PostgreSQL queues (PGMQ layout), retries
failures with backoff, keeps what cannot succeed in dead-letter queues with
the reason it died, and lets people (this CLI) and AI agents (pgbus serve)
inspect and repair them.

Without --database-url or DATABASE_URL, pgbus starts an embedded PostgreSQL
from the server binaries installed on this machine.

Settings come from flags, then environment variables (DATABASE_URL, PGBUS_*),
then the configuration file (--config or PGBUS_CONFIG; see pgbus help config),
then defaults. Exit codes: 0 success, 1 failure, 2 usage error (nothing was
changed), 3 not found.

Quick start: pgbus demo`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setup(cmd)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if idErr := negativeIDError(cmd, err); idErr != nil {
			return idErr
		}
		return usageError{err}
	})
	a.addGlobalFlags(root)
	root.AddCommand(a.migrateCommand(), a.workCommand(), a.demoCommand())
	root.AddCommand(a.queuesCommand(), a.queueCommand(), a.sendCommand())
	root.AddCommand(a.dlqCommand(), a.auditCommand())
	root.AddCommand(a.healthCommand(), a.workersCommand(), a.circuitsCommand(), a.circuitCommand())
	root.AddCommand(configHelpTopic())
	root.AddCommand(a.serveCommand())
	root.AddCommand(a.benchCommand())
	root.AddCommand(versionCommand())
	root.Version = version()
	root.SetVersionTemplate("{{.Version}}\n")
	return root
}

// isCobraUsage recognises the errors cobra returns for a mistyped command
// line, which it does not give a type of their own.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires ", "invalid argument"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
