package engine_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// A payload holding a string that is not valid UTF-8 is refused, naming
// where, as its headers and raw JSON are: marshalled, it became U+FFFD
// without a word. A real U+FFFD, and bytes (base64), are sent as given.
func TestNewMessageRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	type order struct {
		Items []map[string]string
	}
	for _, c := range []struct {
		payload any
		where   string
	}{
		{map[string]string{"a": "\xff\xfe"}, `$."a"`},
		{order{Items: []map[string]string{{"ok": "fine"}, {"note": "bad \xc3"}}}, `$.Items[1]."note"`},
		{map[string]any{"k\xff": 1}, "$ (a key)"},
		{[]any{"x", &struct{ S string }{"\xed\xa0\x80"}}, "$[1].S"},
	} {
		_, err := engine.NewMessage(c.payload, engine.SendOptions{})
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "the string at "+c.where+" is not valid UTF-8") {
			t.Errorf("NewMessage(%#v) = %v; want ErrInvalid naming %s", c.payload, err, c.where)
		}
	}
	for _, ok := range []any{map[string]string{"a": "\ufffd replacement, as typed"}, map[string][]byte{"raw": {0xff, 0xfe}}} {
		m, err := engine.NewMessage(ok, engine.SendOptions{})
		want, _ := json.Marshal(ok)
		if err != nil || string(m.Payload) != string(want) {
			t.Errorf("NewMessage(%#v) = %s, %v; want it sent as %s", ok, m.Payload, err, want)
		}
	}
}
