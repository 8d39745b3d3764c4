package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/tracing"
)

// clearEnv unsets, for the test, the variables that turn tracing on.
func clearEnv(t *testing.T) {
	for _, k := range []string{tracing.EnvSDKDisabled, tracing.EnvTracesExporter, tracing.EnvEndpoint,
		tracing.EnvTracesEndpoint, tracing.EnvProtocol, tracing.EnvTracesProtocol} {
		t.Setenv(k, "")
	}
}

// Tracing is off unless the environment configures it: FromEnv returns no
// Tracer, so nothing is installed.
func TestFromEnvOff(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"nothing set":   {},
		"exporter none": {tracing.EnvTracesExporter: "none"},
		"sdk disabled":  {tracing.EnvSDKDisabled: "true", tracing.EnvTracesExporter: "otlp", tracing.EnvEndpoint: "http://127.0.0.1:4318"},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			tr, shutdown, err := tracing.FromEnv(context.Background())
			if err != nil || tr != nil || tracing.Enabled() {
				t.Fatalf("FromEnv: %v, %v; Enabled %v: want off", tr, err, tracing.Enabled())
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An endpoint alone, or an exporter named, turns tracing on.
func TestFromEnvOn(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"endpoint":        {tracing.EnvEndpoint: "http://127.0.0.1:4318"},
		"traces endpoint": {tracing.EnvTracesEndpoint: "http://127.0.0.1:4318/v1/traces"},
		"otlp over grpc":  {tracing.EnvTracesExporter: "otlp", tracing.EnvProtocol: "grpc"},
		"console":         {tracing.EnvTracesExporter: "console"},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			tr, shutdown, err := tracing.FromEnv(context.Background())
			if err != nil || tr == nil {
				t.Fatalf("FromEnv: %v, %v: want a Tracer", tr, err)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// What pgbus cannot export to is an error that says what to set.
func TestFromEnvRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"exporter": {map[string]string{tracing.EnvTracesExporter: "zipkin"}, `OTEL_TRACES_EXPORTER="zipkin": pgbus exports traces with otlp, console or none`},
		"protocol": {map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318", tracing.EnvTracesProtocol: "http/json"}, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/json": pgbus exports OTLP over http/protobuf (the default) or grpc`},
	} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			tr, _, err := tracing.FromEnv(context.Background())
			if err == nil || tr != nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("FromEnv: %v, %v; want an error saying %q", tr, err, c.want)
			}
		})
	}
}
