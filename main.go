// Command pgbus is a dead-letter and retry engine on PostgreSQL with an MCP
// server for AI agents. See README.md.
package main

import (
	"os"

	"github.com/pgbus/pgbus/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
