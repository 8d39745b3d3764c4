// Command pgbus is a dead-letter and retry engine on PostgreSQL with an MCP
// server for AI agents. See README.md.
package main

import (
	"os"
	"runtime/debug"

	"github.com/pgbus/pgbus/internal/cli"
	"github.com/pgbus/pgbus/internal/memlimit"
)

// gcPercent is the garbage collector's target when GOGC is not set. A
// worker's live heap is small and its allocation rate high (every job
// allocates), so Go's default of 100 collects many times a second; at 400
// a busy worker spends markedly less CPU on collection for a few more
// megabytes of memory.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	// That target lets the heap grow to five times what is live: in a
	// container, the collector must work harder near its limit rather
	// than let the kernel kill the process.
	memlimit.Apply()
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
