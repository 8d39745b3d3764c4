// Package tools holds pgbus's MCP tools, one per file: each file has the
// tool's input and output types, its description and annotations, and its
// handler. Tools call the engine's Go API; no SQL lives here.
package tools

import (
	"github.com/pgbus/pgbus/engine"
)

// Deps is what the tools need from the rest of pgbus.
type Deps struct {
	DLQ   *engine.DLQ
	Admin *engine.Admin
	// AllowPayloads is the server-side gate (--allow-payloads): payloads are
	// shown only when it is set and the call asks for them.
	AllowPayloads bool
	// ReadOnly (--read-only) leaves write tools out: neither listed nor
	// callable.
	ReadOnly bool
}
