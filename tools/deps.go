// Package tools holds pgbus's MCP tools, one per file: each file has the
// tool's input type, its description and annotations, and its handler,
// which parses the input into a request of the operations layer (package
// ops), calls one operation and returns its result. No operation is
// decided here, and no SQL lives here.
package tools

import (
	"github.com/pgbus/pgbus/ops"
)

// Deps is what the tools need from the rest of pgbus: the operations
// layer, which holds the payload gate and read-only mode.
type Deps struct {
	Ops *ops.Service
	// CommandFlags are the global flags the commands the tools relay to an
	// operator carry, each as " --name value": those the server was started
	// with, such as " --config /etc/pgbus.yaml". Empty for none.
	CommandFlags string
}
