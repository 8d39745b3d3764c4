package dashboard_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// Every field of a page that takes a time says, in its hint, that a bare
// date is its midnight in UTC, as the command line's help and the tools'
// arguments do.
func TestDateFieldsSayMidnightUTC(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_dates")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	field := regexp.MustCompile(`<input [^>]*name="(since|until)"[^>]*>`)
	for _, path := range []string{"/dlq/messages?queue=" + q, "/dlq/discarded?queue=" + q, "/audit"} {
		code, page, _ := b.get(path)
		inputs := field.FindAllString(page, -1)
		if code != http.StatusOK || len(inputs) == 0 {
			t.Fatalf("%s: %d, no since or until field:\n%s", path, code, page)
		}
		for _, in := range inputs {
			if !strings.Contains(in, "midnight UTC") {
				t.Errorf("%s: the field %s does not say a date is its midnight UTC", path, in)
			}
		}
	}
}
