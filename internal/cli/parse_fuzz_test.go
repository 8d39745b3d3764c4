package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// checkUsage asserts that err is a usage error (exit 2) whose message
// mentions what.
func checkUsage(t *testing.T, input string, err error, what string) {
	t.Helper()
	var usage usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), what) {
		t.Fatalf("%q: error %v (%T) is not a usage error about %s", input, err, err, what)
	}
}

// FuzzParseHeaders: repeated --header flags (one per line of the input)
// are refused as a usage error about --header, or each key=value becomes
// one header, its key trimmed and its value kept as given.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"tenant=acme", "a=1\nb=2", "a=1\na=2", "=x", "novalue", " k = v ", "k=", "k==v",
		"pgbus_kind=x", "k=\x00", "\xff=1", "a=1\n a =2", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		values := strings.Split(s, "\n")
		out, err := parseHeaders(values)
		if err != nil {
			checkUsage(t, s, err, "--header")
			return
		}
		if len(out) != len(values) {
			t.Fatalf("%q: %d headers from %d flags", s, len(out), len(values))
		}
		for _, v := range values {
			k, val, _ := strings.Cut(v, "=")
			if got, ok := out[strings.TrimSpace(k)]; !ok || got != val {
				t.Fatalf("%q: header %q is %v, want %q", s, strings.TrimSpace(k), got, val)
			}
		}
	})
}

// FuzzReadPayload: a payload given inline or on stdin is refused as a
// usage error about the payload, or is the input without surrounding
// white space and a byte order mark before it, and valid JSON; JSON
// within the size limit is never refused.
func FuzzReadPayload(f *testing.F) {
	for _, s := range []string{`{}`, ` {"order_id": 42} `, `null`, `"\u0000"`, `[1,2`, ``, `   `, `{"a":1}{"b":2}`,
		"\"\xff\"", `1e999`, `"\ud800"`, "\t\n[]\n"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, fromStdin bool) {
		arg, stdin := s, ""
		if fromStdin || s == "-" || strings.HasPrefix(s, "@") {
			// Never read files a fuzzed argument names.
			arg, stdin = "-", s
		}
		out, err := readPayload(arg, true, "", strings.NewReader(stdin))
		want := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace([]byte(s)), []byte("\uFEFF")))
		if err != nil {
			checkUsage(t, s, err, "payload")
			if json.Valid(want) && len(s) <= store.MaxPayloadBytes {
				t.Fatalf("%q: valid JSON refused: %v", s, err)
			}
			return
		}
		if !json.Valid(out) || !bytes.Equal(out, want) {
			t.Fatalf("%q: payload %q, want %q as valid JSON", s, out, want)
		}
	})
}
