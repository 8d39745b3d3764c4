package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A right-to-left override (U+202E) in the text of a message, its error
// message, class, backtrace, kind or payload, is shown as its escape, as
// the command line shows it: raw, it showed the text after it reversed,
// within the element <bdi> isolates too.
func TestPagesEscapeBidiControlsInMessageText(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_rlo")
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge\u202ecard", Class: "exec\u202eexit_1",
		Message: "card declined \u202e1_tixe by the bank", Trace: "main.charge()\n\u202e\t/app/main.go:42",
		Payload: `{"note": "ref \u202e42"}`})
	b := newBrowser(t, serve(t, st, serverOpts{allowPayloads: true}))
	for _, path := range []string{
		"/dlq?queue=" + q,
		"/dlq/messages?queue=" + q,
		fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d&payload=1", q, ids[0]),
	} {
		code, page, _ := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, page)
		}
		if strings.ContainsRune(page, '\u202e') {
			t.Errorf("GET %s shows U+202E raw:\n%s", path, page)
		}
		if !strings.Contains(page, `card declined \u202e1_tixe by the bank`) {
			t.Errorf("GET %s does not show the error message with the override escaped:\n%s", path, page)
		}
	}
}
