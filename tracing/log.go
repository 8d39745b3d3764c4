package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"

	"github.com/pgbus/pgbus/ops"
)

// The OTLP headers variables, which the exporters read themselves: they
// carry credentials (an Authorization or API key header).
const (
	EnvHeaders       = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
)

// sdkPrefix opens every message of the SDK in pgbus's log.
const sdkPrefix = "pgbus: OpenTelemetry: "

// SetLogger sends the OpenTelemetry SDK's own messages to log, worded as
// pgbus's and with their secrets hidden (ops.RedactingHandler): its
// internal log, which quotes what it could not parse of the OTEL_*
// variables, and the errors it reports, such as failed exports. Without
// it they go to standard error verbatim, a malformed
// OTEL_EXPORTER_OTLP_HEADERS with its credentials. The values of the
// headers variables are hidden from these messages whatever they look
// like. The SDK's logger is the process's: call SetLogger before FromEnv,
// which reads those variables. A nil log is slog.Default().
func SetLogger(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	h := sdkHandler{next: ops.RedactingHandler(log.Handler()), hide: strings.NewReplacer(headerSecrets()...)}
	otel.SetLogger(logr.FromSlogHandler(h))
	sdk := slog.New(h)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		sdk.Warn("tracing failed; check the collector at the OTLP endpoint and the OTEL_* variables", "err", err)
	}))
}

// headerSecrets returns, as pairs for strings.NewReplacer, the parts of
// the headers variables the SDK may quote when it cannot parse them, each
// replaced by ops.Redacted: every value, and the whole of a header that is
// not name=value with a valid name. ops.RedactText would miss many of them
// (x-honeycomb-team: ..., a token as a URL's user).
func headerSecrets() []string {
	var parts []string
	for _, env := range []string{EnvHeaders, EnvTracesHeaders} {
		for header := range strings.SplitSeq(os.Getenv(env), ",") {
			name, value, found := strings.Cut(header, "=")
			parts = append(parts, value)
			if !found || !validHeaderName(strings.TrimSpace(name)) {
				parts = append(parts, header, name)
			}
		}
	}
	// Longest first, so that a header is hidden whole before its parts.
	slices.SortFunc(parts, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, p := range parts {
		// Shorter texts would hide common words, and cannot be much of a
		// secret.
		if p = strings.TrimSpace(p); len(p) >= 4 && !slices.Contains(pairs, p) {
			pairs = append(pairs, p, ops.Redacted)
		}
	}
	return pairs
}

// validHeaderName reports whether s is an HTTP header name (RFC 9110
// token).
func validHeaderName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
	}) < 0
}

// sdkHandler words the SDK's records as pgbus's (sdkPrefix, its warnings
// as warnings) and hides the headers variables' values in them, before
// next redacts them as every log line.
type sdkHandler struct {
	next slog.Handler
	hide *strings.Replacer
}

// sdkLevel maps the SDK's verbosity onto pgbus's levels: logr's V(1), its
// warnings, arrives as slog level -1 and is a warning; V(4) and V(8), its
// information and debugging, are debugging; errors stay errors.
func sdkLevel(l slog.Level) slog.Level {
	switch {
	case l == -1:
		return slog.LevelWarn
	case l < 0:
		return slog.LevelDebug
	}
	return l
}

func (h sdkHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, sdkLevel(l))
}

func (h sdkHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, sdkLevel(rec.Level), sdkPrefix+h.hide.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h sdkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	hidden := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		hidden[i] = h.attr(a)
	}
	return sdkHandler{next: h.next.WithAttrs(hidden), hide: h.hide}
}

func (h sdkHandler) WithGroup(name string) slog.Handler {
	return sdkHandler{next: h.next.WithGroup(name), hide: h.hide}
}

// attr returns a with the headers' values hidden in its text; a value
// that is not text (an error, a list) becomes text when it held one.
func (h sdkHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.hide.Replace(v.String()))
	case slog.KindGroup:
		group := v.Group()
		hidden := make([]any, len(group))
		for i, g := range group {
			hidden[i] = h.attr(g)
		}
		return slog.Group(a.Key, hidden...)
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if hidden := h.hide.Replace(s); hidden != s {
			return slog.String(a.Key, hidden)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
