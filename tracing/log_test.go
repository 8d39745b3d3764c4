package tracing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/pgbus/pgbus/tracing"
)

// The SDK's own messages about malformed OTLP headers, and the errors it
// reports, reach pgbus's log worded as its own, with no credential of the
// headers in them, whether the redaction patterns know them or not.
func TestSDKLogsNoHeaderSecret(t *testing.T) {
	clearEnv(t)
	t.Setenv(tracing.EnvEndpoint, "http://127.0.0.1:1")
	t.Setenv(tracing.EnvHeaders, "Authorization: Bearer SdkSecret42xyz,x-honeycomb-team=Honey%zzSecret43,bad key: KeySecret44=v")
	t.Setenv(tracing.EnvTracesHeaders, "")
	var buf bytes.Buffer
	tracing.SetLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { tracing.SetLogger(slog.New(slog.DiscardHandler)) })

	tr, shutdown, err := tracing.FromEnv(context.Background())
	if err != nil || tr == nil {
		t.Fatalf("FromEnv: %v, %v; want a Tracer", tr, err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	otel.Handle(errors.New(`traces export: Post "http://u:ExportPW45@collector/v1/traces": refused`))

	out := buf.String()
	for _, want := range []string{`"msg":"pgbus: OpenTelemetry: parse headers"`, `"msg":"pgbus: OpenTelemetry: escape header value"`,
		`"msg":"pgbus: OpenTelemetry: tracing failed; check the collector`, `"level":"ERROR"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"SdkSecret42xyz", "Secret43", "KeySecret44", "ExportPW45"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows %s:\n%s", secret, out)
		}
	}
}
