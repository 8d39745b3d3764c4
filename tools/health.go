package tools

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// HealthInput is the input of pgbus_health: it takes no arguments.
type HealthInput struct{}

// HealthOutput is the output of pgbus_health.
type HealthOutput = engine.Health

const healthDescription = `One-look health of pgbus: OK, DEGRADED or STALLED, with a reason for each problem (stalled backlog, no running workers, stale workers, new dead letters, paused queues) and totals of backlog, dead messages and running workers.

Use it first when asked "is anything wrong?" or before investigating failures. Next: for dead letters call pgbus_dlq_summary; for a slow or stalled queue call pgbus_queue_stats and pgbus_queue_messages; for worker problems call pgbus_workers. Each reason's message names the tool to call.`

// NewHealth returns the pgbus_health tool.
func NewHealth(d Deps) server.ServerTool {
	return server.ServerTool{
		Tool: newTool("pgbus_health", healthDescription, readAnnotations("Health overview"), HealthInput{}, HealthOutput{}),
		Handler: handler(func(ctx context.Context, _ HealthInput) (HealthOutput, error) {
			return retryVanished(func() (HealthOutput, error) { return d.Admin.Health(ctx) })
		}),
	}
}

// retryVanished runs fn, an operation over every queue, again when it fails
// because a queue was dropped while it ran (store.ErrNotFound): a queue that
// is gone is no reason to fail an overview.
func retryVanished[T any](fn func() (T, error)) (T, error) {
	var out T
	var err error
	for range 3 {
		if out, err = fn(); !errors.Is(err, store.ErrNotFound) {
			break
		}
	}
	return out, err
}
