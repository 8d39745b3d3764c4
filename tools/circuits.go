package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/store"
)

// CircuitsInput is the input of pgbus_circuits: it takes no arguments.
type CircuitsInput struct{}

// CircuitsOutput is the output of pgbus_circuits.
type CircuitsOutput struct {
	Circuits []store.BreakerState `json:"circuits" jsonschema_description:"Every circuit breaker by name."`
	Open     int                  `json:"open" jsonschema_description:"Breakers open or half-open now: their jobs are being snoozed."`
}

const circuitsDescription = `Circuit breakers shared by all workers: one per downstream (an HTTP host, a command, or a name a handler chose). A breaker opens after its threshold of consecutive failures; jobs meeting it open are snoozed without using an attempt until the cool-off ends, then one probe goes through: success closes it, failure reopens it with a doubled cool-off.

Use it when pgbus_queue_stats shows work scheduled but not running, or failures cluster on one downstream. Next: if the downstream is known to be back, pgbus_circuit_reset closes the breaker at once.`

// NewCircuits returns the pgbus_circuits tool.
func NewCircuits(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_circuits", circuitsDescription, readAnnotations("Circuit breakers"), CircuitsInput{}, CircuitsOutput{}),
		Handler: handler(func(ctx context.Context, _ CircuitsInput) (CircuitsOutput, error) {
			all, err := d.Admin.Circuits(ctx)
			out := CircuitsOutput{Circuits: all}
			if out.Circuits == nil {
				out.Circuits = []store.BreakerState{}
			}
			for _, b := range all {
				if b.State != store.BreakerClosed {
					out.Open++
				}
			}
			return out, err
		}),
	}
}

// CircuitResetInput is the input of pgbus_circuit_reset.
type CircuitResetInput struct {
	Name string `json:"name" jsonschema_description:"Breaker name as pgbus_circuits lists it."`
}

// CircuitResetOutput is the output of pgbus_circuit_reset.
type CircuitResetOutput struct {
	Name  string `json:"name"`
	State string `json:"state" jsonschema_description:"The breaker's state now: closed."`
	Next  string `json:"next" jsonschema_description:"What to do next."`
}

const circuitResetDescription = `Closes a circuit breaker by hand and clears its failure count, so snoozed jobs run at their next visibility time instead of waiting for a probe.

Use it only when the downstream is known to be healthy again (pgbus_circuits shows it open). If it is not, the breaker reopens after its threshold of failures.`

// NewCircuitReset returns the pgbus_circuit_reset tool.
func NewCircuitReset(d Deps) server.ServerTool {
	const name = "pgbus_circuit_reset"
	return server.ServerTool{
		Tool: newTool(name, circuitResetDescription, writeAnnotations("Reset a circuit breaker", false, true), CircuitResetInput{}, CircuitResetOutput{}),
		Handler: audited(d, name, handler(func(ctx context.Context, in CircuitResetInput) (CircuitResetOutput, error) {
			if in.Name == "" {
				return CircuitResetOutput{}, fixf("name is required: pass the breaker's name; pgbus_circuits lists them")
			}
			if err := d.Admin.ResetCircuit(ctx, in.Name); err != nil {
				return CircuitResetOutput{}, err
			}
			return CircuitResetOutput{Name: in.Name, State: store.BreakerClosed,
				Next: "snoozed jobs run at their next visibility time; watch pgbus_circuits and pgbus_queue_stats."}, nil
		})),
	}
}
