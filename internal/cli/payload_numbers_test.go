package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dlq show prints a payload's and headers' numbers and text as
// stored: integers past float64's precision, a 1.0 and a 0.0000001 keep
// their digits, and <, > and & are not written as \u escapes.
func TestDLQShowKeepsNumbersAndText(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	payload := `{"big": 9007199254740993, "huge": 12345678901234567890, "one": 1.0, "tiny": 0.0000001, "html": "<a>&"}`
	headers := `{"pgbus_kind": "k", "trace_n": 9007199254740993, "ratio": 1.0}`
	id := pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "k", Payload: payload, Headers: headers})[0]
	out := d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "orders")
	for _, want := range []string{`"big": 9007199254740993`, `"huge": 12345678901234567890`, `"one": 1.0`, `"tiny": 0.0000001`, `"html": "<a>&"`,
		`"trace_n": 9007199254740993`, `"ratio": 1.0`} {
		if !strings.Contains(out, want) {
			t.Errorf("dlq show does not print %s as stored:\n%s", want, out)
		}
	}
}
