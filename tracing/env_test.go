package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pgbus/pgbus/engine"
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
		"grpc host:port":  {tracing.EnvProtocol: "grpc", tracing.EnvEndpoint: "localhost:4317"},
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
		// The exporter would take the name for a URL scheme, export to no
		// host, and fail every batch.
		"endpoint without a scheme": {map[string]string{tracing.EnvEndpoint: "otel-collector:4318"}, `OTEL_EXPORTER_OTLP_ENDPOINT="otel-collector:4318": OTLP over http/protobuf needs a URL such as http://otel-collector:4318`},
		// The exporter would ignore what it cannot parse, and export to
		// localhost instead.
		"traces endpoint not a URL": {map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318", tracing.EnvTracesEndpoint: "10.0.0.5:4318/v1/traces"}, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="10.0.0.5:4318/v1/traces": OTLP over http/protobuf needs a URL such as http://10.0.0.5:4318/v1/traces`},
		"grpc endpoint not a URL":   {map[string]string{tracing.EnvEndpoint: "10.0.0.5:4317", tracing.EnvProtocol: "grpc"}, `OTEL_EXPORTER_OTLP_ENDPOINT="10.0.0.5:4317": OTLP over grpc needs a URL such as http://10.0.0.5:4317`},
		"credentials hidden":        {map[string]string{tracing.EnvEndpoint: "u:SecretPw9@collector:4318"}, `OTEL_EXPORTER_OTLP_ENDPOINT="[REDACTED]@collector:4318"`},
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

// An exporter named twice exports once: each span reaches the collector
// one time.
func TestFromEnvExporterNamedTwice(t *testing.T) {
	clearEnv(t)
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv(tracing.EnvTracesExporter, "otlp, OTLP")
	t.Setenv(tracing.EnvEndpoint, collector.URL)
	tr, shutdown, err := tracing.FromEnv(context.Background())
	if err != nil || tr == nil {
		t.Fatalf("FromEnv: %v, %v: want a Tracer", tr, err)
	}
	tr.Sending(context.Background(), "orders", &engine.SendOptions{})(1, nil)
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("the collector got %d exports of one span; want 1", n)
	}
}
