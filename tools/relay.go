package tools

import (
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// relay is how a server names the steps no tool of it takes: a read-only
// server leaves its write tools out, and the commands an agent passes on
// to an operator carry the global flags the server was started with
// (Deps.CommandFlags), or they would run against another database or
// without its handlers.
type relay struct {
	readOnly bool
	flags    string
}

// relay is d's relay; without an operations layer, that of a writable
// server.
func (d Deps) relay() relay {
	return relay{readOnly: d.Ops != nil && d.Ops.ReadOnly(), flags: d.CommandFlags}
}

// command is line, a command line, with the server's global flags when it
// runs pgbus.
func (r relay) command(line string) string { return vocab.WithFlags(line, r.flags) }

// call renders h for an agent: the tool with its arguments, or the command
// to ask an operator to run when no tool of this server does it.
func (r relay) call(h ops.Hint) string {
	if _, ok := vocab.ToolOn(h.Op, r.readOnly); !ok {
		return "the CLI: " + r.command(vocab.Command(h))
	}
	return vocab.ToolCallOn(h, r.readOnly)
}
