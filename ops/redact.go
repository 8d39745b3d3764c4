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
