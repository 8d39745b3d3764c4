package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/store"
)

func TestCheckJSONText(t *testing.T) {
	t.Parallel()
	ok := []string{`{}`, `"caf\u00e9"`, `"café"`, `"\\u0000"`, `"\ud83d\ude00"`, `["\uD83D\uDE00", "\\\\u0000"]`, `"a\\"`}
	for _, s := range ok {
		if why := store.CheckJSONText([]byte(s)); why != "" {
			t.Errorf("CheckJSONText(%s) = %q, want accepted", s, why)
		}
	}
	bad := []string{`"\u0000"`, `{"k\u0000": 1}`, `"\\\u0000"`, "\"\xff\"", "\"\xc3\"", `"\udc00"`, `"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `["\ud800", "\udc00"]`}
	for _, s := range bad {
		if why := store.CheckJSONText([]byte(s)); why == "" {
			t.Errorf("CheckJSONText(%q) accepted it", s)
		}
	}
}

func TestCheckValueText(t *testing.T) {
	t.Parallel()
	if why := store.CheckValueText(map[string]any{"a": []any{"x", map[string]any{"b": "ok"}}, "n": 1.5}); why != "" {
		t.Errorf("clean value refused: %s", why)
	}
	for _, v := range []any{"a\x00", "\xff", []any{"x", "\xff"}, map[string]any{"k\x00": 1}, map[string]any{"k": map[string]any{"j": "\x00"}}} {
		if why := store.CheckValueText(v); why == "" {
			t.Errorf("CheckValueText(%q) accepted it", v)
		}
	}
}
