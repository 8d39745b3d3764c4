package runner

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/tracing"
)

// flushTimeout bounds how long stopping tracing waits to export the spans
// not exported yet.
const flushTimeout = 5 * time.Second

// Tracing sets OpenTelemetry tracing up as the standard OTEL_* environment
// variables say (tracing.FromEnv) and returns the observers that trace:
// none when tracing is off, so nothing is installed and headers are left
// alone. The line that says tracing is on, with its exporters and OTLP
// endpoint, is logged at level: info for a long-running process, whose
// start it describes beside its other lines, debug for a one-shot command,
// whose standard error holds only what it has to say. stop flushes the
// spans not exported yet; call it after the workers and servers have
// stopped.
func Tracing(ctx context.Context, log *slog.Logger, level slog.Level) (observers []engine.Observer, stop func(), err error) {
	log = orDiscard(log)
	tr, shutdown, err := tracing.FromEnv(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	if tr == nil {
		return nil, func() {}, nil
	}
	exporters := tracing.Exporters()
	endpoint := ""
	if slices.Contains(exporters, "otlp") {
		endpoint = tracing.Endpoint()
	}
	log.Log(ctx, level, "pgbus: tracing with OpenTelemetry", "exporter", strings.Join(exporters, ","), "endpoint", endpoint)
	return []engine.Observer{tr}, func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := shutdown(fctx); err != nil {
			log.Warn("pgbus: some spans were not exported; check the collector at the OTLP endpoint", "err", err)
		}
	}, nil
}
