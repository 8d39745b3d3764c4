package store

import (
	"encoding/json"
	"testing"
)

// jsonbText writes the escapes of characters past ASCII as the characters
// and leaves every other byte as it was, so that the JSON means the same.
func TestJSONBText(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 1}`:                     `{"a": 1}`,
		`"\u00e9\u00E9"`:               `"éé"`,
		`"\u0041\n\u001f"`:             `"\u0041\n\u001f"`,
		`"\ud83d\ude00"`:               `"😀"`,
		`"\ud83d"`:                     `"\ud83d"`,
		`"\ud83d\u0041"`:               `"\ud83d\u0041"`,
		`"\ude00\ud83d"`:               `"\ude00\ud83d"`,
		`"\\u00e9"`:                    `"\\u00e9"`,
		`"\\\u00e9"`:                   `"\\é"`,
		`"a\u2028b\u2029"`:             "\"a\u2028b\u2029\"",
		`{"\u20ac": ["\u00e9", "\\"]}`: `{"€": ["é", "\\"]}`,
	} {
		got := jsonbText([]byte(in))
		if got != want {
			t.Errorf("jsonbText(%s) = %s; want %s", in, got, want)
		}
		var a, b any
		if json.Valid([]byte(in)) && (json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || !equalJSON(a, b)) {
			t.Errorf("jsonbText(%s) = %s is not the same JSON", in, got)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
