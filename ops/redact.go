package ops

import (
	"encoding/json"

	"github.com/pgbus/pgbus/internal/redact"
)

// Redacted replaces every secret the view layer hides.
const Redacted = redact.Marker

// IsSecretKey reports whether the value under key is hidden.
func IsSecretKey(key string) bool { return redact.IsSecretKey(key) }

// RedactText hides secrets in free text and returns how many it hid:
// values of secret-looking keys (password=..., "token": "...", with or
// without spaces around the separator), bearer and basic credentials,
// passwords in URLs and DSNs, private keys and tokens recognisable by
// their shape.
func RedactText(s string) (string, int) { return redact.Text(s) }

// redactCutText is RedactText for s, a text cut in its middle
// (redact.Cut): a secret the cut went through is hidden as the whole text
// hides it.
func redactCutText(s string) (string, int) { return redact.Cut(s) }

// RedactJSON returns raw with the values under secret-looking keys hidden,
// at any depth, and secrets in string values hidden as in RedactText; n
// counts what was hidden. ok is false when raw is not JSON.
func RedactJSON(raw json.RawMessage) (out json.RawMessage, n int, ok bool) {
	return redact.JSON(raw)
}

// redactJSONCut is RedactJSON for the start of a payload closed where a
// read stopped, each container the cut left open holding cut
// (redact.JSONCut).
func redactJSONCut(closed json.RawMessage, cut string) (json.RawMessage, int, bool) {
	return redact.JSONCut(closed, cut)
}

// shownKind is a job kind as a view shows it, secrets redacted: a kind is
// whatever its sender wrote ("sync password=..."), and the logs and the
// audit log redact it already. Filters still compare the kind as stored.
func shownKind(kind string) string {
	out, _ := RedactText(kind)
	return out
}

// marshalPlain marshals without HTML escaping, so text reads as it was
// sent.
func marshalPlain(v any) json.RawMessage { return redact.MarshalPlain(v) }

// maxJSONDepth is how deep encoding/json decodes arrays and objects nested
// in one another (the notes below say it in words). PostgreSQL stores jsonb nested deeper, which can then be
// neither decoded nor checked for secrets.
const maxJSONDepth = 10000

// nestedTooDeep tells whether raw, JSON or the start of it, nests arrays
// and objects deeper than maxJSONDepth, counting brackets outside strings.
func nestedTooDeep(raw []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			if depth++; depth > maxJSONDepth {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

// payloadHiddenNote says why the payload raw is hidden when it could not
// be redacted: too deep to decode, or not JSON.
func payloadHiddenNote(raw []byte) string {
	if nestedTooDeep(raw) {
		return "payload hidden: it is nested more than 10,000 levels deep, too deep to check for secrets"
	}
	return "payload hidden: it is not valid JSON, so secrets in it could not be redacted"
}

// headersHiddenNote is payloadHiddenNote for headers.
func headersHiddenNote(raw []byte) string {
	if nestedTooDeep(raw) {
		return "headers hidden: they are nested more than 10,000 levels deep, too deep to check for secrets"
	}
	return "headers hidden: they are not valid JSON"
}
