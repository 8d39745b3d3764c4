package runner

import (
	"context"
	"log/slog"
	"os"
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
// alone. stop flushes the spans not exported yet; call it after the
// workers and servers have stopped.
func Tracing(ctx context.Context, log *slog.Logger) (observers []engine.Observer, stop func(), err error) {
	log = orDiscard(log)
	tr, shutdown, err := tracing.FromEnv(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	if tr == nil {
		return nil, func() {}, nil
	}
	log.Info("pgbus: tracing with OpenTelemetry", "exporter", os.Getenv(tracing.EnvTracesExporter),
		"endpoint", os.Getenv(tracing.EnvEndpoint)+os.Getenv(tracing.EnvTracesEndpoint))
	return []engine.Observer{tr}, func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := shutdown(fctx); err != nil {
			log.Warn("pgbus: some spans were not exported; check the collector at the OTLP endpoint", "err", err)
		}
	}, nil
}
