package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// CircuitsInput is the input of pgbus_circuits.
type CircuitsInput struct {
	Name string `json:"name,omitempty" jsonschema_description:"Only the breaker of this name, as this list shows it (an HTTP host, a command, or a handler's breaker name). Omit it to list every breaker."`
}

const circuitsDescription = `Circuit breakers shared by all workers, one per downstream (an HTTP host, a command, or a chosen name). A breaker opens after a threshold of consecutive failures; jobs meeting it open wait (no attempt used) until the cool-off ends, then one probe goes through: success closes it, failure reopens it for twice as long. Each shows its last success, failure and error, the jobs it holds, and the queues and kinds using it.

Use it when pgbus_queue_stats shows work scheduled but not running, or failures cluster on one downstream. Next: pgbus_circuit_reset once the downstream is back; pgbus_circuit_open holds its jobs during maintenance.`

// NewCircuits returns the pgbus_circuits tool.
func NewCircuits(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_circuits", circuitsDescription, readAnnotations("Circuit breakers"), CircuitsInput{}, ops.Circuits{}),
		Handler: handler(d, func(ctx context.Context, in CircuitsInput) (ops.Circuits, error) {
			return d.Ops.Circuits(ctx, ops.CircuitsRequest{Name: in.Name})
		}),
	}
}
