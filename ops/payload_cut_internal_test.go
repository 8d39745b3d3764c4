package ops

import (
	"encoding/json"
	"strings"
	"testing"
)

// A start of a payload's text closes into JSON that holds what it read
// whole, marks where the read stopped in every container left open, and
// shows no part of a key or value the cut went through.
func TestCloseStartKeepsOnlyWholeValues(t *testing.T) {
	m, _ := json.Marshal(readCutMark)
	mark := string(m)
	for _, c := range []struct{ start, want string }{
		{`{"id": 7, "blob": "abcdef`, `{"id": 7, "blob": ` + mark + `, "…": ` + mark + `}`},
		{`{"id": 7, "bl`, `{"id": 7, "…": ` + mark + `}`},
		{`{"id": 7, "n": 1234`, `{"id": 7, "n": ` + mark + `, "…": ` + mark + `}`},
		{`{"id": 7, "ok": tr`, `{"id": 7, "ok": ` + mark + `, "…": ` + mark + `}`},
		{`{"id": 7, "ok": true`, `{"id": 7, "ok": true, "…": ` + mark + `}`},
		{`{"id": 7, `, `{"id": 7, "…": ` + mark + `}`},
		{`{`, `{"…": ` + mark + `}`},
		{`{"…": 1, "a": [1, 2, {"k": "v"`, `{"…": 1, "a": [1, 2, {"k": "v", "…": ` + mark + `}, ` + mark + `], "……": ` + mark + `}`},
		{`[["password", "hunt`, `[["password", ` + mark + `], ` + mark + `]`},
		{`{"a": {"…": "hunt`, `{"a": {"…": ` + mark + `, "……": ` + mark + `}, "…": ` + mark + `}`},
		{`"a short string cut`, mark},
		{`"` + strings.Repeat("x", 300) + `\u00`, `"` + strings.Repeat("x", 44) + readCutMark + `"`},
		{`{"a": ["` + strings.Repeat("é", 300) + `\`, `{"a": ["` + strings.Repeat("é", 44) + readCutMark + `", ` + mark + `], "…": ` + mark + `}`},
		// Redacted before it is cut: " password=[REDACTED]" counts 20.
		{`{"a": "` + strings.Repeat(`\"`, 300) + ` password=hunter2`, `{"a": "` + strings.Repeat(`\"`, 64) + readCutMark + `", "…": ` + mark + `}`},
		{`12`, mark},
	} {
		got, ok := closeStart([]byte(c.start), 4096)
		if !ok || string(got) != c.want {
			t.Errorf("closeStart(%s) = %s, %v; want %s", c.start, got, ok, c.want)
			continue
		}
		if !json.Valid(got) {
			t.Errorf("closeStart(%s) = %s, not JSON", c.start, got)
		}
	}
}

// Redacted where it was cut, the start of a payload hides what the rest
// could have made a secret: a pair's value whose name the cut took (jsonb
// writes "value" before "header"), and a pair array whose end it took.
func TestCutPayloadHidesWhatTheCutMadeUncertain(t *testing.T) {
	for _, start := range []string{
		`{"env": [{"value": "hunter2secret", "header": "Authoriz`,
		`{"env": [{"value": "hunter2secret", `,
		`{"kv": [["password", "hunter2secret"`,
		`{"kv": [["password", "hunter2secret"], ["user", "bo`,
		`{"password": "hunter2secr`,
		`{"note": "` + strings.Repeat("x", 400) + ` password=hunter2secret and more`,
		`{"note": "` + strings.Repeat("x", 40) + ` password=hunter2secret` + strings.Repeat("x", 400),
	} {
		v := &viewer{showPay: true}
		pv := v.cutPayload(json.RawMessage(start), 1<<20, 4096)
		if !pv.shown || !pv.truncated || pv.payload != nil || !pv.previewJSON {
			t.Errorf("%s: shown %v, truncated %v, whole %s, JSON %v; want a JSON preview, never the payload", start, pv.shown, pv.truncated, pv.payload, pv.previewJSON)
		}
		if strings.Contains(pv.preview, "hunter") {
			t.Errorf("%s: preview shows the secret: %s", start, pv.preview)
		}
		if !strings.Contains(pv.preview, readCutMark) || !strings.Contains(pv.note, "it is 1048576 bytes") {
			t.Errorf("%s: preview %s, note %q; want the cut marked and the size told", start, pv.preview, pv.note)
		}
	}
	// Whole, a pair's value with a name that is no secret shows.
	v := &viewer{showPay: true}
	if pv := v.cutPayload(json.RawMessage(`{"env": [{"value": "debug", "name": "LOG_LEVEL"}, {"val`), 1<<20, 4096); !strings.Contains(pv.preview, `"debug"`) {
		t.Errorf("a whole pair that is no secret is hidden: %s", pv.preview)
	}
}

// A secret that a pattern knows only by what follows it (a URL's password
// by its @, a list of header values by its ], a quoted value by its
// quote), long enough to start more than the margin before the cut, is
// hidden in a cut string as it is in the whole one.
func TestCutStringHidesSecretsThatNeedTheirEnd(t *testing.T) {
	long := strings.Repeat("S3cr", 150)
	for _, start := range []string{
		`{"note": "retry with postgres://app:` + long,
		`{"error": "upstream 401, request headers: {\"Cookie\":[\"sid=` + long,
		`{"error": "upstream 401: X-Api-Key:[` + long,
		`{"note": "the password is '` + strings.Repeat("S3cr ", 120),
	} {
		v := &viewer{showPay: true}
		pv := v.cutPayload(json.RawMessage(start), 1<<20, 4096)
		if strings.Contains(pv.preview, "S3cr") || !strings.Contains(pv.preview, readCutMark) {
			t.Errorf("%s…: preview %s; want the secret hidden and the cut marked", start[:40], pv.preview)
		}
	}
}

// An error text cut for a view hides a secret the cut went through as the
// whole text does.
func TestCutErrorTextHidesSecretsThatNeedTheirEnd(t *testing.T) {
	v := &viewer{}
	for _, s := range []string{
		"dial failed: postgres://app:" + strings.Repeat("S3cr", 200) + "@db/app",
		`upstream said 401 for {"Cookie":["sid=` + strings.Repeat("S3cr", 200) + `"]}`,
	} {
		if got := v.text(s, 300); strings.Contains(got, "S3cr") {
			t.Errorf("text(%.40s…) = %s; want the secret hidden", s, got)
		}
	}
}
