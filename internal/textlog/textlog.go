// Package textlog is the log format of --log-format text: one line a
// record, such as
//
//	2026-12-04 03:44:19.060Z INF pgbus: job dead-lettered queue=orders msg_id=42 err="card declined"
//
// its time, as every time among its values, in UTC, whatever the
// process's zone, with the level and keys in color on a terminal. Values are quoted as Go
// quotes strings whenever they hold a blank, a quote, an equals sign or
// anything not printable, so a value is never cut short and a downstream's
// error text cannot move the cursor or recolor an operator's terminal:
// control characters and escape sequences are written as \n, \x1b, ...,
// bytes that are not UTF-8 as \xff, and the characters the other outputs
// show escaped (internal/hiddenchar: bidirectional controls, invisible
// ones, variation selectors, tag characters) as \ufe0f, \U000e0100, as
// Go writes them, even those Go counts printable.
package textlog

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/hiddenchar"
)

// The escape sequences of the colors used on a terminal.
const (
	faint    = "\x1b[2m"
	notFaint = "\x1b[22m"
	reset    = "\x1b[0m"
	red      = "\x1b[91m"
	green    = "\x1b[92m"
	yellow   = "\x1b[93m"
)

// lineTime is the layout of a line's time, always in UTC: short, with
// its year and zone, so that it is never taken for another day's or
// zone's time.
const lineTime = "2006-01-02 15:04:05.000Z"

// New returns a handler that writes records at level and above to w, one
// line each, colored when color is true.
func New(w io.Writer, level slog.Leveler, color bool) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &handler{out: &output{w: w}, level: level, color: color}
}

// output is the writer the handlers derived from one New share, so that
// their lines never interleave.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

type handler struct {
	out   *output
	level slog.Leveler
	color bool
	attrs []byte // WithAttrs' attributes, formatted, each with a leading blank
	group string // the WithGroup prefix of keys, such as "http."
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	buf := make([]byte, 0, 256)
	if !r.Time.IsZero() {
		buf = r.Time.UTC().AppendFormat(buf, lineTime)
		buf = append(buf, ' ')
	}
	buf = h.appendLevel(buf, r.Level)
	buf = append(buf, ' ')
	buf = appendText(buf, r.Message, false)
	buf = append(buf, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		buf = h.appendAttr(buf, h.group, a)
		return true
	})
	buf = append(buf, '\n')
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := h.out.w.Write(buf)
	return err
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	c.attrs = append([]byte(nil), h.attrs...)
	for _, a := range attrs {
		c.attrs = h.appendAttr(c.attrs, h.group, a)
	}
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

// appendLevel appends the level's three-letter name, with its distance
// from the named level when it lies between two (INF+2).
func (h *handler) appendLevel(buf []byte, l slog.Level) []byte {
	name, base, color := "ERR", slog.LevelError, red
	switch {
	case l < slog.LevelInfo:
		name, base, color = "DBG", slog.LevelDebug, ""
	case l < slog.LevelWarn:
		name, base, color = "INF", slog.LevelInfo, green
	case l < slog.LevelError:
		name, base, color = "WRN", slog.LevelWarn, yellow
	}
	colored := h.color && color != ""
	if colored {
		buf = append(buf, color...)
	}
	buf = append(buf, name...)
	if d := l - base; d > 0 {
		buf = append(buf, '+')
		buf = strconv.AppendInt(buf, int64(d), 10)
	} else if d < 0 {
		buf = strconv.AppendInt(buf, int64(d), 10)
	}
	if colored {
		buf = append(buf, reset...)
	}
	return buf
}

// appendAttr appends " key=value", the key behind prefix; a group's
// attributes each so, behind the group's name; an empty attribute or
// group nothing.
func (h *handler) appendAttr(buf []byte, prefix string, a slog.Attr) []byte {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, g := range v.Group() {
			buf = h.appendAttr(buf, prefix, g)
		}
		return buf
	}
	if a.Key == "" && v.Equal(slog.Value{}) {
		return buf
	}
	buf = append(buf, ' ')
	if h.color {
		buf = append(buf, faint...)
	}
	buf = appendText(buf, prefix+a.Key, true)
	buf = append(buf, '=')
	if h.color {
		buf = append(buf, notFaint...)
	}
	_, isErr := v.Any().(error)
	if !h.color || !(isErr || a.Key == "error" || a.Key == "err") {
		return appendValue(buf, v)
	}
	buf = append(buf, red...)
	return append(appendValue(buf, v), reset...)
}

func appendValue(buf []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendText(buf, v.String(), true)
	case slog.KindInt64:
		return strconv.AppendInt(buf, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(buf, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(buf, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(buf, v.Bool())
	case slog.KindDuration:
		return append(buf, v.Duration().String()...)
	case slog.KindTime:
		return v.Time().UTC().AppendFormat(buf, time.RFC3339Nano)
	}
	return appendText(buf, anyText(v.Any()), true)
}

// anyText is x as text: an error's message, a TextMarshaler's text, a
// byte slice as the text it holds, anything else as fmt prints it. A nil
// pointer behind an interface, whose methods may not expect one, is
// <nil>.
func anyText(x any) (s string) {
	defer func() {
		if recover() != nil {
			s = "<nil>"
		}
	}()
	switch x := x.(type) {
	case nil:
		return "<nil>"
	case error:
		return x.Error()
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			return "!ERROR: " + err.Error()
		}
		return string(b)
	case []byte:
		return string(x)
	case json.RawMessage:
		// A map or list logged through redaction reaches here as its
		// JSON, which fmt would print as a list of byte values.
		return string(x)
	}
	return fmt.Sprint(x)
}

// appendText appends s, quoted as Go quotes a string when it must be: a
// key or value (strict) that is empty or holds a blank, '=' or '"', and
// any text holding something not printable (a control character, an
// escape sequence, bytes that are not UTF-8), which the quotes write as
// an escape. A message is text with blanks: only the latter quote it.
func appendText(buf []byte, s string, strict bool) []byte {
	if !needsQuotes(s, strict) {
		return append(buf, s...)
	}
	// strconv quotes the characters it counts not printable; those it
	// counts printable that hide or change text (a variation selector)
	// are escaped here, in the same form.
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if size > 1 && hiddenchar.Is(r) {
			buf = appendQuoted(buf, s[start:i])
			if r > 0xffff {
				buf = fmt.Appendf(buf, `\U%08x`, r)
			} else {
				buf = fmt.Appendf(buf, `\u%04x`, r)
			}
			start = i + size
		}
		i += size
	}
	buf = appendQuoted(buf, s[start:])
	return append(buf, '"')
}

// appendQuoted appends s as strconv quotes it, without the quotes.
func appendQuoted(buf []byte, s string) []byte {
	if s == "" {
		return buf
	}
	q := strconv.Quote(s)
	return append(buf, q[1:len(q)-1]...)
}

func needsQuotes(s string, strict bool) bool {
	if strict && s == "" {
		return true
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1: // not UTF-8
			return true
		case r == ' ':
			if strict {
				return true
			}
		case !unicode.IsPrint(r), hiddenchar.Is(r), strict && (r == '=' || r == '"'):
			return true
		}
		i += size
	}
	return false
}
