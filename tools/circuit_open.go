package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// CircuitOpenInput is the input of pgbus_circuit_open.
type CircuitOpenInput struct {
	Name string `json:"name" jsonschema_description:"Breaker name as pgbus_circuits lists it."`
	For  string `json:"for" jsonschema_description:"How long it stays open: a duration such as 30m, 2h or 1d, 1s to 7d."`
	// Reason is optional: the breaker shows it, with who opened it,
	// until that open period ends.
	Reason string `json:"reason,omitempty" jsonschema_description:"Why, shown with the breaker until it closes: the maintenance window, a ticket. At most 500 bytes."`
}

const circuitOpenDescription = `Opens a circuit breaker by hand for a while, for a downstream known to be down or in maintenance: jobs using it wait, no attempt used, while other jobs run; then one probe goes through. pgbus_circuit_reset with end_opening_by_hand ends it early.`

func circuitOpenTool() mcp.Tool {
	return newTool("pgbus_circuit_open", circuitOpenDescription, writeAnnotations("Open a circuit breaker", false, false), CircuitOpenInput{}, ops.CircuitOpen{})
}

// NewCircuitOpen returns the pgbus_circuit_open tool.
func NewCircuitOpen(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: circuitOpenTool(),
		Handler: handler(d, func(ctx context.Context, in CircuitOpenInput) (ops.CircuitOpen, error) {
			req, err := in.request()
			if err != nil {
				return ops.CircuitOpen{}, err
			}
			return d.Ops.CircuitOpen(ctx, req)
		}),
	}
}

// request is the opening the arguments ask for.
func (in CircuitOpenInput) request() (ops.CircuitOpenRequest, error) {
	if in.For == "" && in.Name == "" {
		return ops.CircuitOpenRequest{}, fixNext([]ops.Hint{{Op: ops.OpCircuits, Why: "lists the breakers"}},
			"name and for are required: pass the breaker's name as pgbus_circuits lists it, and how long it stays open, such as 30m, 2h or 1d (1s to 7d)")
	}
	if in.For == "" {
		return ops.CircuitOpenRequest{}, fixf("for is required: pass how long the breaker stays open, such as 30m, 2h or 1d (1s to 7d)")
	}
	d, err := ops.ParseAge(in.For)
	if err != nil {
		return ops.CircuitOpenRequest{}, fixf("for %q is not a duration; pass one such as 30m, 2h or 1d (1s to 7d)", shorten(in.For))
	}
	return ops.CircuitOpenRequest{Name: in.Name, For: d, Reason: in.Reason}, nil
}
