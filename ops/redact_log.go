package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// RedactingHandler wraps a log handler so that no log line carries a
// secret: the message and every attribute value are redacted as RedactText
// redacts free text, values under secret-looking keys (IsSecretKey) are
// hidden whole (but a true or false, which tells nothing), and errors and Stringers are logged as their redacted text.
// Job errors reach the log verbatim from downstreams, so the log is one
// more place text leaves the process.
func RedactingHandler(h slog.Handler) slog.Handler { return redactingHandler{next: h} }

type redactingHandler struct{ next slog.Handler }

func (r redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.next.Enabled(ctx, l)
}

func (r redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redactedText(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.next.Handle(ctx, out)
}

func (r redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a)
	}
	return redactingHandler{next: r.next.WithAttrs(red)}
}

func (r redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{next: r.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	// A group's attributes are judged each by its own key; a true or false
	// holds no secret, whatever its key.
	if IsSecretKey(a.Key) && v.Kind() != slog.KindGroup && v.Kind() != slog.KindBool {
		return slog.String(a.Key, Redacted)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redactedText(v.String()))
	case slog.KindGroup:
		group := v.Group()
		red := make([]any, len(group))
		for i, g := range group {
			red[i] = redactAttr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		return slog.Any(a.Key, redactAny(v.Any()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// redactAny returns x as text with its secrets hidden when x can hold
// text; other values (numbers, times, durations) stay as they are.
func redactAny(x any) any {
	switch x := x.(type) {
	case nil:
		return nil
	case error:
		return redactedText(x.Error())
	case fmt.Stringer:
		return redactedText(x.String())
	case json.RawMessage:
		return json.RawMessage(redactedText(string(x)))
	case []byte:
		return redactedText(string(x))
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = redactedText(s)
		}
		return out
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprintf("%T", x)
	}
	out, _, _ := RedactJSON(raw)
	return out
}

// redactedText hides the secrets of s, read as JSON when it is a JSON
// object or array (a payload logged as text), else as free text.
func redactedText(s string) string {
	if t := strings.TrimSpace(s); t != "" && (t[0] == '{' || t[0] == '[') {
		if out, _, ok := RedactJSON(json.RawMessage(t)); ok {
			return string(out)
		}
	}
	out, _ := RedactText(s)
	return out
}
