package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/pgbus/pgbus/store"
)

// Bounds of what a resource returns of one message.
const (
	maxPayloadShown = 16 << 10
	maxHeadersShown = 16 << 10
)

// secretKeys matches object keys whose values are never shown, at any
// depth: password, token, secret, authorization and their relatives.
var secretKeys = regexp.MustCompile(`(?i)password|passwd|passphrase|secret|token|auth|credential|api[_-]?key|private[_-]?key|cookie`)

const redacted = "[REDACTED]"

// redact returns raw with the values under secret-looking keys replaced,
// and how many were replaced; ok is false when raw is not JSON.
func redact(raw json.RawMessage) (out json.RawMessage, n int, ok bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, 0, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, 0, false
	}
	n = redactValue(v)
	b, err := marshalPlain(v)
	if err != nil {
		return nil, 0, false
	}
	return b, n, true
}

func redactValue(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKeys.MatchString(k) && val != nil {
				x[k] = redacted
				n++
				continue
			}
			n += redactValue(val)
		}
	case []any:
		for _, val := range x {
			n += redactValue(val)
		}
	}
	return n
}

// marshalPlain is json.Marshal without HTML escaping.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

type payloadView struct {
	payload   json.RawMessage
	preview   string
	shown     bool
	truncated bool
	redacted  int
	note      string
}

// viewPayload redacts a payload and bounds it: whole up to maxPayloadShown
// bytes, else the start as text in preview with a note saying where to get
// the rest (more).
func viewPayload(raw json.RawMessage, more string) payloadView {
	red, n, ok := redact(raw)
	if !ok {
		return payloadView{note: "payload hidden: it is not valid JSON, so secrets in it could not be redacted; " + more}
	}
	if red == nil {
		red = json.RawMessage("null")
	}
	v := payloadView{shown: true, redacted: n}
	if len(red) <= maxPayloadShown {
		v.payload = red
		return v
	}
	v.truncated = true
	v.preview = cutBytes(string(red), maxPayloadShown)
	v.note = fmt.Sprintf("payload truncated: it is %d bytes redacted; payload_preview holds the first %d as text. For all of it, %s", len(red), len(v.preview), more)
	return v
}

// headersView returns headers without the dead-letter block (returned
// decoded as dead_letter), secrets redacted and bounded.
func headersView(raw json.RawMessage) (json.RawMessage, int, string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, 0, ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		delete(obj, store.HeaderDeadLetter)
		if b, err := marshalPlain(obj); err == nil {
			raw = b
		}
	}
	red, n, ok := redact(raw)
	if !ok {
		return nil, 0, "headers hidden: they are not valid JSON"
	}
	if len(red) > maxHeadersShown {
		return nil, n, fmt.Sprintf("headers left out: they are %d bytes; pgbus_dlq_show returns them", len(red))
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

// cutChars cuts s to at most max characters, marking the cut with "…".
func cutChars(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}

// cutBacktrace keeps the first lines of a backtrace within the bounds.
func cutBacktrace(s string) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > maxBacktraceLines {
		s = string(bytes.Join(lines[:maxBacktraceLines], []byte("\n"))) + "\n…"
	}
	return cutChars(s, maxBacktraceChars)
}
