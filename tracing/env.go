package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pgbus/pgbus/ops"
)

// The environment variables FromEnv reads itself; the SDK and the OTLP
// exporters read the rest of the standard ones (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG,
// OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS, ..._TIMEOUT, ..._COMPRESSION,
// ..._CERTIFICATE, ..._INSECURE and their _TRACES_ forms).
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

const (
	defaultServiceName     = "pgbus"
	exporterOTLP           = "otlp"
	exporterConsole        = "console"
	exporterNone           = "none"
	protocolHTTP           = "http/protobuf"
	protocolGRPC           = "grpc"
	supportedExporters     = "otlp, console or none"
	supportedOTLPProtocols = "http/protobuf (the default) or grpc"
)

// Enabled reports whether the environment turns tracing on: tracing is off
// unless OTEL_TRACES_EXPORTER names an exporter other than none, or an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true turns it
// off whatever else is set.
func Enabled() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvSDKDisabled)), "true") {
		return false
	}
	names := exporterNames()
	if len(names) == 0 {
		return os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvTracesEndpoint) != ""
	}
	for _, n := range names {
		if n != exporterNone {
			return true
		}
	}
	return false
}

// exporterNames lists OTEL_TRACES_EXPORTER's values, lowercased, each
// once: an exporter named twice would export every span twice.
func exporterNames() []string {
	var names []string
	for n := range strings.SplitSeq(os.Getenv(EnvTracesExporter), ",") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Exporters lists the exporters FromEnv sets up as the environment says:
// the names OTEL_TRACES_EXPORTER gives but none, or otlp when only an OTLP
// endpoint turns tracing on. It is empty when tracing is off (Enabled).
func Exporters() []string {
	if !Enabled() {
		return nil
	}
	names := exporterNames()
	if len(names) == 0 {
		return []string{exporterOTLP} // an endpoint was set
	}
	return slices.DeleteFunc(names, func(n string) bool { return n == exporterNone })
}

// Endpoint is the OTLP endpoint the otlp exporter sends spans to, as the
// environment sets it: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT, to which the exporter over http/protobuf
// adds the signal's path, /v1/traces, and the one over gRPC nothing; ""
// when neither is set, for the exporter's default on localhost.
func Endpoint() string {
	if v := os.Getenv(EnvTracesEndpoint); v != "" {
		return v
	}
	base := os.Getenv(EnvEndpoint)
	proto := os.Getenv(EnvTracesProtocol)
	if proto == "" {
		proto = os.Getenv(EnvProtocol)
	}
	if base == "" || strings.EqualFold(strings.TrimSpace(proto), protocolGRPC) {
		return base
	}
	return strings.TrimRight(base, "/") + "/v1/traces"
}

// FromEnv sets tracing up as the standard OTEL_* environment variables
// say (see Enabled), with a TracerProvider that batches spans to the
// exporters named: otlp (over http/protobuf, or grpc when
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL says
// so) and console (one JSON span a line on standard error). The service
// is named pgbus unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// name it. When tracing is off, it returns a nil Tracer, which traces
// nothing and may go in the observers as it is, and a shutdown that does
// nothing. Call shutdown before the process exits: it flushes
// the spans not exported yet.
func FromEnv(ctx context.Context) (*Tracer, func(context.Context) error, error) {
	nothing := func(context.Context) error { return nil }
	if !Enabled() {
		return nil, nothing, nil
	}
	names := Exporters()
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", defaultServiceName)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, nothing, fmt.Errorf("tracing: read OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME: %w; fix them or unset them", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	var exporters []sdktrace.SpanExporter
	closeAll := func() {
		for _, e := range exporters {
			_ = e.Shutdown(context.WithoutCancel(ctx))
		}
	}
	for _, n := range names {
		var exp sdktrace.SpanExporter
		switch n {
		case exporterOTLP:
			exp, err = otlpExporter(ctx)
		case exporterConsole:
			exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
		default:
			err = fmt.Errorf("%s=%q: pgbus exports traces with %s; set one of those, or unset it to turn tracing off", EnvTracesExporter, n, supportedExporters)
		}
		if err != nil {
			closeAll()
			return nil, nothing, fmt.Errorf("tracing: %w", err)
		}
		exporters = append(exporters, exp)
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return New(tp), tp.Shutdown, nil
}

// otlpExporter makes the OTLP exporter of the protocol the environment
// names; the exporter reads its endpoint, headers and the rest itself.
func otlpExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	proto, from := os.Getenv(EnvTracesProtocol), EnvTracesProtocol
	if proto == "" {
		proto, from = os.Getenv(EnvProtocol), EnvProtocol
	}
	switch strings.ToLower(strings.TrimSpace(proto)) {
	case "", protocolHTTP:
		if err := checkEndpoint(protocolHTTP); err != nil {
			return nil, err
		}
		return otlptracehttp.New(ctx)
	case protocolGRPC:
		if err := checkEndpoint(protocolGRPC); err != nil {
			return nil, err
		}
		return otlptracegrpc.New(ctx)
	}
	return nil, fmt.Errorf("%s=%q: pgbus exports OTLP over %s; set one of those", from, proto, supportedOTLPProtocols)
}

// checkEndpoint checks the OTLP endpoint that the exporter of proto would
// use (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
// OTEL_EXPORTER_OTLP_ENDPOINT), when one is set. The exporters take what
// they cannot parse as unset, exporting to localhost, and over
// http/protobuf take the host of host:port for a URL scheme, exporting to
// no host at all: either way every span is lost while pgbus runs.
// gRPC's exporter takes host:port as it is, so only a value that is not a
// URL is refused for it.
func checkEndpoint(proto string) error {
	name := EnvTracesEndpoint
	v := os.Getenv(name)
	if v == "" {
		name, v = EnvEndpoint, os.Getenv(EnvEndpoint)
	}
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err == nil && (proto == protocolGRPC || (u.Scheme == "http" || u.Scheme == "https") && u.Host != "") {
		return nil
	}
	shown := hideUserinfo(strings.TrimSpace(v))
	return fmt.Errorf("%s=%q: OTLP over %s needs a URL such as http://%s (or https://); set it so, with the scheme", name, shown, proto, shown)
}

// hideUserinfo hides the credentials an endpoint may hold before an @,
// which an error quoting it would show.
func hideUserinfo(v string) string {
	at := strings.LastIndex(v, "@")
	if at < 0 {
		return v
	}
	start := 0
	if i := strings.Index(v, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return v[:start] + ops.Redacted + v[at:]
}
