package dashboard_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
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
		Message: "card declined \u202e1_tixe by the bank\U000E0049\U000E0047", Trace: "main.charge()\n\u202e\t/app/main.go:42",
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
		if strings.ContainsAny(page, "\u202e\U000E0049") {
			t.Errorf("GET %s shows U+202E or a tag character raw:\n%s", path, page)
		}
		if !strings.Contains(page, `card declined \u202e1_tixe by the bank\udb40\udc49\udb40\udc47`) {
			t.Errorf("GET %s does not show the error message with the override escaped:\n%s", path, page)
		}
	}
}

// hiddenInput matches a form's hidden input, which the page does not show.
var hiddenInput = regexp.MustCompile(`<input type="hidden"[^>]*>`)

// The names an agent or a configuration gives (an audit entry's client,
// who opened a breaker by hand, the breaker's name) are shown with their
// hidden characters escaped, as the command line shows them: raw, a
// right-to-left override in a client's name reversed the words pgbus
// writes after it ("via http").
func TestPagesEscapeBidiControlsInNames(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	breaker := "brk\u202egnp.exe"
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CircuitOpen(ops.WithClient(ctx, "mcp:agent\u202e"), ops.CircuitOpenRequest{Name: breaker, For: time.Hour, Reason: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))
	for path, want := range map[string][]string{
		"/audit":    {`mcp:agent\u202e`},
		"/circuits": {`brk\u202egnp.exe`, `opened by hand by mcp:agent\u202e`},
	} {
		code, page, _ := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, page)
		}
		// A form's hidden input keeps the name as it is, to post it back;
		// what the page shows must not.
		if shown := hiddenInput.ReplaceAllString(page, ""); strings.ContainsRune(shown, '\u202e') {
			t.Errorf("GET %s shows U+202E raw:\n%s", path, shown)
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("GET %s does not show %s:\n%s", path, w, page)
			}
		}
	}
}
