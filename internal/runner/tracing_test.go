package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
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
	observers, stop, err := runner.Tracing(context.Background(), nil, slog.LevelInfo)
	if err != nil || observers != nil {
		t.Fatalf("Tracing: %v, %v; want no observers", observers, err)
	}
	stop()
}

// With an exporter named, the one observer is a tracing.Tracer, and a
// misnamed one is an error that says what to set.
func TestTracingOn(t *testing.T) {
	setTracingEnv(t, map[string]string{tracing.EnvTracesExporter: "console"})
	observers, stop, err := runner.Tracing(context.Background(), nil, slog.LevelInfo)
	if err != nil || len(observers) != 1 {
		t.Fatalf("Tracing: %v, %v; want one observer", observers, err)
	}
	if _, ok := observers[0].(*tracing.Tracer); !ok {
		t.Errorf("observer %T, want *tracing.Tracer", observers[0])
	}
	stop()

	setTracingEnv(t, map[string]string{tracing.EnvTracesExporter: "jaeger"})
	if _, _, err := runner.Tracing(context.Background(), nil, slog.LevelInfo); err == nil || !strings.Contains(err.Error(), "otlp, console or none") {
		t.Errorf("Tracing with exporter jaeger: %v", err)
	}
}

// The line that says tracing is on names the exporters in use, otlp when
// only an OTLP endpoint turns it on, and the endpoint the exporter sends
// to, at the level the caller asks: info for a long-running process,
// debug for a one-shot command.
func TestTracingSaysItsExporter(t *testing.T) {
	for _, c := range []struct {
		env                map[string]string
		level              slog.Level
		exporter, endpoint string
	}{
		// Over http/protobuf the exporter adds the path of traces to the
		// endpoint of every signal; over gRPC nothing.
		{map[string]string{tracing.EnvEndpoint: "http://collector:4318/"}, slog.LevelInfo, "otlp", "http://collector:4318/v1/traces"},
		{map[string]string{tracing.EnvEndpoint: "http://collector:4317", tracing.EnvProtocol: "grpc"}, slog.LevelInfo, "otlp", "http://collector:4317"},
		{map[string]string{tracing.EnvEndpoint: "http://collector:4318", tracing.EnvTracesEndpoint: "http://traces:4318/v1/traces"},
			slog.LevelDebug, "otlp", "http://traces:4318/v1/traces"},
		{map[string]string{tracing.EnvTracesExporter: " Console,none,console"}, slog.LevelInfo, "console", ""},
		{map[string]string{tracing.EnvTracesExporter: "otlp,console", tracing.EnvEndpoint: "http://collector:4318"}, slog.LevelDebug, "otlp,console", "http://collector:4318/v1/traces"},
	} {
		setTracingEnv(t, c.env)
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		_, stop, err := runner.Tracing(context.Background(), log, c.level)
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		stop()
		var line struct {
			Level, Msg, Exporter, Endpoint string
		}
		for l := range strings.Lines(buf.String()) {
			if strings.Contains(l, "tracing with OpenTelemetry") {
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatal(err)
				}
			}
		}
		if line.Level != c.level.String() || line.Exporter != c.exporter || line.Endpoint != c.endpoint {
			t.Errorf("with %v, the log says %+v; want level %s, exporter %q, endpoint %q\n%s", c.env, line, c.level, c.exporter, c.endpoint, buf.String())
		}
	}
}
