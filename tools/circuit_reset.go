package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// CircuitResetInput is the input of pgbus_circuit_reset.
type CircuitResetInput struct {
	Name string `json:"name" jsonschema_description:"Breaker name as pgbus_circuits lists it."`
	// EndOpeningByHand is needed to close a breaker opened by hand.
	EndOpeningByHand bool `json:"end_opening_by_hand,omitempty" jsonschema_description:"Close a breaker opened by hand (opened_by_hand in pgbus_circuits) before its time is up; without it the reset is refused. Only when whoever opened it agrees."`
}

const circuitResetDescription = `Closes a circuit breaker by hand, clears its failure count and releases the jobs it snoozed, paced over its cool-off, instead of waiting for a probe.

Use it only when the downstream is known to be healthy again (pgbus_circuits shows it open). Else the breaker reopens after its threshold of failures.`

func circuitResetTool() mcp.Tool {
	return newTool("pgbus_circuit_reset", circuitResetDescription, writeAnnotations("Reset a circuit breaker", false, true), CircuitResetInput{}, ops.CircuitReset{})
}

// NewCircuitReset returns the pgbus_circuit_reset tool.
func NewCircuitReset(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: circuitResetTool(),
		Handler: handler(d, func(ctx context.Context, in CircuitResetInput) (ops.CircuitReset, error) {
			return d.Ops.CircuitReset(ctx, in.request())
		}),
	}
}

// request is the reset the arguments ask for.
func (in CircuitResetInput) request() ops.CircuitResetRequest {
	return ops.CircuitResetRequest{Name: in.Name, EndOpeningByHand: in.EndOpeningByHand}
}
