package ops

import (
	"encoding/json"
	"strings"
	"testing"
)

// A payload, or headers, nested deeper than the JSON decoder goes (PostgreSQL
// stores them: jsonb has no such bound) is hidden saying so, not called
// invalid JSON; JSON that is invalid still says it is.
func TestDeeplyNestedJSONIsHiddenForItsDepth(t *testing.T) {
	deep := json.RawMessage(`{"a": ` + strings.Repeat("[", 10050) + strings.Repeat("]", 10050) + `}`)
	v := &viewer{showPay: true}
	for what, note := range map[string]string{
		"payload":         v.payload(deep, 1<<30).note,
		"cut payload":     v.cutPayload(deep[:20000], 1<<20, 4096).note,
		"headers":         func() string { _, n, _ := v.headers(deep); return n }(),
		"invalid payload": v.payload(json.RawMessage(`{"a": [}`), 1<<30).note,
		"invalid headers": func() string { _, n, _ := v.headers(json.RawMessage(`{"a": [}`)); return n }(),
	} {
		invalid := strings.HasPrefix(what, "invalid")
		if strings.Contains(note, "not valid JSON") != invalid || strings.Contains(note, "nested") == invalid || !strings.Contains(note, "hidden") {
			t.Errorf("%s: note %q", what, note)
		}
	}
}
