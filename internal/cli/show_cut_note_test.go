package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dlq show shortens the error messages of its failures table; when
// it does, it says so, and that --json shows them whole. A table it did
// not shorten has no such note.
func TestDLQShowSaysWhenItShortensErrors(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	long := "card declined: " + strings.Repeat("the issuer said no again; ", 40)
	ids := pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "k", Message: long}, pgtest.DeadSpec{Kind: "k", Message: "card declined"})
	const note = "--json shows them whole"
	// The error line and the failure's row, both shortened.
	if out := d.ok(t, "dlq", "show", fmt.Sprint(ids[0]), "--queue", "orders"); !strings.Contains(out, "note: 2 error messages are shortened above to fit their lines; "+note) {
		t.Errorf("dlq show of a long error does not say the table shortened it:\n%s", out)
	}
	if out := d.ok(t, "dlq", "show", fmt.Sprint(ids[1]), "--queue", "orders"); strings.Contains(out, note) {
		t.Errorf("dlq show of a short error says it shortened something:\n%s", out)
	}
}
