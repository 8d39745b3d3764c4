package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/tracing"
)

func setTracingEnv(t *testing.T, env map[string]string) {
	for _, k := range []string{tracing.EnvSDKDisabled, tracing.EnvTracesExporter, tracing.EnvEndpoint,
		tracing.EnvTracesEndpoint, tracing.EnvProtocol, tracing.EnvTracesProtocol} {
		t.Setenv(k, env[k])
	}
}

// With no OTEL_* variables set, no observer is installed.
func TestTracingOffInstallsNothing(t *testing.T) {
	setTracingEnv(t, nil)
	observers, stop, err := runner.Tracing(context.Background(), nil)
	if err != nil || observers != nil {
		t.Fatalf("Tracing: %v, %v; want no observers", observers, err)
	}
	stop()
}

// With an exporter named, the one observer is a tracing.Tracer, and a
// misnamed one is an error that says what to set.
func TestTracingOn(t *testing.T) {
	setTracingEnv(t, map[string]string{tracing.EnvTracesExporter: "console"})
	observers, stop, err := runner.Tracing(context.Background(), nil)
	if err != nil || len(observers) != 1 {
		t.Fatalf("Tracing: %v, %v; want one observer", observers, err)
	}
	if _, ok := observers[0].(*tracing.Tracer); !ok {
		t.Errorf("observer %T, want *tracing.Tracer", observers[0])
	}
	stop()

	setTracingEnv(t, map[string]string{tracing.EnvTracesExporter: "jaeger"})
	if _, _, err := runner.Tracing(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "otlp, console or none") {
		t.Errorf("Tracing with exporter jaeger: %v", err)
	}
}
