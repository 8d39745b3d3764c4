package demo

import (
	"fmt"
	"strings"

	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// Where is the database a demo ran on, as the next steps must name it for
// an agent's server to find it.
type Where struct {
	// External is true for a server at a URL given outside the
	// configuration file (DATABASE_URL or --database-url): the agent's
	// server is told to set DATABASE_URL as it was for the run.
	External bool
	// URLCarried is true when Flags hold the run's --database-url, so
	// that the steps need no DATABASE_URL set.
	URLCarried bool
	// DataDir is the embedded server's directory when the run chose one
	// outside the configuration file (--data-dir or PGBUS_DATA_DIR), ""
	// for the default or the file's.
	DataDir string
	// Config is the configuration file the run read, as an absolute
	// path, "" for none: the agent's server starts with it, its database
	// and handlers.
	Config string
	// Flags are the global flags every step keeps, as written after it on
	// a command line: those the run's command line gave, and the
	// configuration file the run's database came from.
	Flags string
}

// NextSteps are the demo's closing lines: commands to try on what it
// dead-lettered (groups, for a sample id), then how to connect an AI agent
// to the same database over MCP.
func NextSteps(where Where, groups []ops.DeadGroup) (string, error) {
	server := mcpServer{Command: "pgbus", Args: []string{"serve"}}
	if where.Config != "" {
		// The file's queues may have real handlers: the agent's server
		// only serves, as it does without a file.
		server.Args = append(server.Args, "--config", where.Config, "--no-workers")
	}
	setup, claudeEnv := "", ""
	switch {
	case where.External:
		server.Env = map[string]string{"DATABASE_URL": "<the database URL of this run>"}
		claudeEnv = " -e DATABASE_URL=" + vocab.ShellQuote("<the database URL of this run>")
		if !where.URLCarried {
			setup = "  (with DATABASE_URL set as for this run)\n"
		}
	case where.DataDir != "":
		server.Args = append(server.Args, "--data-dir", where.DataDir)
		setup = "  export PGBUS_DATA_DIR=" + vocab.ShellQuote(where.DataDir) + "\n"
	}
	f := where.Flags
	mcp, err := mcpConfigHints(server)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`
Try next:
%[5]s  pgbus dlq list --queue %[1]s%[7]s
  pgbus dlq show %[4]s --queue %[1]s%[7]s
  # The outage is over: retry its victims, then work the queue until it is empty.
  pgbus dlq retry-all --queue %[1]s --error-class %[2]s --yes%[7]s
  pgbus work --queue %[1]s --handler demo --until-idle%[7]s
  pgbus dlq summary%[7]s

Connect an AI agent (MCP) to investigate and repair these dead letters:
  pgbus serve%[6]s
      MCP over stdio; the agent's client starts it. For Claude Code:
  claude mcp add pgbus%[8]s -- pgbus serve%[6]s
%[3]s  Then ask: "Why are jobs dying in %[1]s? Retry the ones that can succeed now."
  (pgbus must be on PATH: go build -o pgbus . or go install.)
`, Orders, handlers.ClassDemoUnavailable, mcp, sampleID(groups), setup, argsSuffix(server.Args[1:]), f, claudeEnv), nil
}

// sampleID is a dead message of the orders queue to show, or "ID".
func sampleID(groups []ops.DeadGroup) string {
	for _, g := range groups {
		if g.SourceQueue == Orders && len(g.SampleMsgIDs) > 0 {
			return fmt.Sprint(g.SampleMsgIDs[0])
		}
	}
	return "ID"
}

func argsSuffix(args []string) string {
	if len(args) == 0 {
		return ""
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = vocab.ShellQuote(a)
	}
	return " " + strings.Join(quoted, " ")
}
