package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/pgbus/pgbus/store"
)

// Response bounds: what one tool result may carry of a message.
const (
	// maxPayloadShown is the largest payload pgbus_dlq_show returns whole.
	maxPayloadShown = 16 << 10
	// maxListPayloadShown is the same for each message of a list.
	maxListPayloadShown = 4 << 10
	// maxHeadersShown bounds the headers of one message.
	maxHeadersShown = 16 << 10
	// maxBacktraceChars and maxBacktraceLines bound one backtrace.
	maxBacktraceChars = 2000
	maxBacktraceLines = 10
	// maxErrorMessageChars bounds one error message of a failure history.
	maxErrorMessageChars = 2000
)

// secretKey matches the object keys whose values are never shown: the
// value is replaced by redactedValue, however deep in the payload or the
// headers it sits.
var secretKey = regexp.MustCompile(`(?i)password|passwd|secret|token|api[_-]?key|authorization|auth|credential|private[_-]?key|cookie`)

const redactedValue = "[REDACTED]"

// redactJSON returns raw with the values under secret-looking keys replaced,
// and how many were. ok is false when raw is not JSON.
func redactJSON(raw json.RawMessage) (out json.RawMessage, n int, ok bool) {
	if len(raw) == 0 {
		return raw, 0, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep big integers exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, 0, false
	}
	v, n = redactValue(v)
	return marshalPlain(v), n, true
}

func redactValue(v any) (any, int) {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKey.MatchString(k) {
				if val != nil {
					x[k] = redactedValue
					n++
				}
				continue
			}
			var m int
			x[k], m = redactValue(val)
			n += m
		}
	case []any:
		for i, val := range x {
			var m int
			x[i], m = redactValue(val)
			n += m
		}
	}
	return v, n
}

// marshalPlain marshals without HTML escaping, so payload text reads as
// it was sent.
func marshalPlain(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// payloadPolicy is the payload gate of one call: the server's
// --allow-payloads and the call's include_payload.
type payloadPolicy struct {
	allowed bool // the server runs with --allow-payloads
	asked   bool // the call passed include_payload: true
}

func (p payloadPolicy) show() bool { return p.allowed && p.asked }

// hiddenNote says why payloads are hidden and how to see them.
func (p payloadPolicy) hiddenNote() string {
	switch {
	case !p.allowed && p.asked:
		return "payload hidden: the server runs without --allow-payloads, so payloads are never shown; an operator can restart it with --allow-payloads"
	case !p.allowed:
		return "payload hidden: the server runs without --allow-payloads (payloads are shown only when the server allows them and the call passes include_payload: true)"
	default:
		return "payload hidden: pass include_payload: true to see it (values under keys such as password or token stay redacted)"
	}
}

// payloadView is a message payload as a tool returns it.
type payloadView struct {
	Payload   json.RawMessage // nil unless shown whole
	Shown     bool
	Truncated bool
	Preview   string // the start of the redacted payload, when truncated
	Redacted  int
	Note      string
}

// viewPayload applies the payload policy, redaction and the size bound max
// to one payload. more says where to get the whole payload.
func viewPayload(raw json.RawMessage, p payloadPolicy, max int, more string) payloadView {
	if !p.show() {
		return payloadView{Note: p.hiddenNote()}
	}
	red, n, ok := redactJSON(raw)
	if !ok {
		return payloadView{Note: "payload hidden: it is not valid JSON, so secrets in it could not be redacted; " + more}
	}
	v := payloadView{Shown: true, Redacted: n}
	if len(red) <= max {
		v.Payload = red
		if v.Payload == nil {
			v.Payload = json.RawMessage("null")
		}
		return v
	}
	v.Truncated = true
	v.Preview = cutBytes(string(red), max)
	v.Note = fmt.Sprintf("payload truncated: it is %d bytes; payload_preview holds the first %d as text. For all of it, %s", len(red), len(v.Preview), more)
	return v
}

// viewHeaders returns a message's headers without the dead-letter block
// (tools return it decoded) and with secrets redacted; headers over the
// bound are left out with a note.
func viewHeaders(raw json.RawMessage, more string) (json.RawMessage, int, string) {
	if len(raw) == 0 {
		return nil, 0, ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		delete(obj, store.HeaderDeadLetter)
		raw = marshalPlain(obj)
	}
	red, n, ok := redactJSON(raw)
	if !ok {
		return nil, 0, "headers hidden: they are not valid JSON"
	}
	if len(red) > maxHeadersShown {
		return nil, n, fmt.Sprintf("headers left out: they are %d bytes; %s", len(red), more)
	}
	return red, n, ""
}

// cutBytes cuts s to at most max bytes on a character boundary.
func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// cutChars cuts s to at most max characters, marking the cut.
func cutChars(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	r := []rune(s)
	return string(r[:max-1]) + "…", true
}

// shortBacktrace cuts a backtrace to its first lines within the character
// bound.
func shortBacktrace(s string, lines, chars int) (string, bool) {
	cut := false
	if parts := strings.SplitN(s, "\n", lines+1); len(parts) > lines {
		s = strings.Join(parts[:lines], "\n") + "\n…"
		cut = true
	}
	s, c := cutChars(s, chars)
	return s, cut || c
}

// payloadReplacedMarker starts the original payload in the history row
// that records a retry with a corrected payload.
const payloadReplacedMarker = "Original payload: "

// boundFailures cuts a failure history for a response: the newest keep
// records, error messages and backtraces bounded, and the original payload
// that a payload-replaced record quotes subject to the payload policy. It
// returns the records kept, how many were left out, and whether anything
// was cut.
func boundFailures(h []store.FailureRecord, keep, traceLines, traceChars int, p payloadPolicy) ([]store.FailureRecord, int, bool) {
	omitted := 0
	if len(h) > keep {
		omitted = len(h) - keep
		h = h[omitted:]
	}
	out := make([]store.FailureRecord, len(h))
	cut := false
	for i, f := range h {
		if f.ErrorClass == store.PayloadReplacedClass {
			f.ErrorMessage = replacedPayloadMessage(f.ErrorMessage, p)
		}
		var c1, c2 bool
		f.ErrorMessage, c1 = cutChars(f.ErrorMessage, maxErrorMessageChars)
		f.Backtrace, c2 = shortBacktrace(f.Backtrace, traceLines, traceChars)
		cut = cut || c1 || c2
		out[i] = f
	}
	return out, omitted, cut
}

// replacedPayloadMessage applies the payload policy to the original payload
// quoted by a payload-replaced history record.
func replacedPayloadMessage(msg string, p payloadPolicy) string {
	head, orig, found := strings.Cut(msg, payloadReplacedMarker)
	if !found {
		return msg
	}
	if !p.show() {
		return head + payloadReplacedMarker + "[hidden: " + p.hiddenNote() + "]"
	}
	red, _, ok := redactJSON(json.RawMessage(orig))
	if !ok {
		return head + payloadReplacedMarker + "[hidden: cut short in the history, so secrets in it could not be redacted]"
	}
	return head + payloadReplacedMarker + string(red)
}
