package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The corrected-payload form of a dead message's page refuses a payload of
// another JSON type than the stored one, as the operation does for every
// front end: the page shows again with the reason next to the text, kept
// as typed, on the preview and on a confirmation sent directly, and the
// message stays dead. An object for an object is previewed.
func TestCorrectedPayloadOfAnotherTypeIsRefused(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_type")
	dlq := q + "_dlq"
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Message: "amount is not a number", Payload: `{"sku": "a-1", "amount": "ten"}`})
	id := fmt.Sprint(ids[0])
	b := newBrowser(t, serve(t, st, serverOpts{allowPayloads: true}))
	_, page, _ := b.get(pageURLOf("/dlq/message", "queue", dlq, "id", id, "payload", "1"))
	token := csrf(t, page)
	form := func(payload string) url.Values {
		return url.Values{"csrf": {token}, "queue": {dlq}, "id": {id}, "show_payload": {"1"}, "payload": {payload}}
	}

	for _, c := range []struct {
		what, payload string
		want          string
	}{
		{"a string holding an object", `"{\"sku\": \"a-1\", \"amount\": 10}"`,
			"The corrected payload is a JSON string holding JSON (an object), and the dead message's payload is a JSON object: pass the object itself as the payload, not quoted in a string."},
		{"a string holding an array", `"[{\"sku\": \"a-1\"}]"`, "a JSON string holding JSON (an array)"},
		{"a plain string", `"ten"`, "The dead message's payload is a JSON object; the correction is a string, which its job would get instead and fail on again"},
		{"a number", `10`, "the correction is a number"},
	} {
		for _, path := range []string{"/dlq/message/correct", "/dlq/message/correct/retry"} {
			code, page, _ := b.post(path, form(c.payload), nil)
			if code != http.StatusBadRequest || !strings.Contains(page, `data-page="message"`) || !strings.Contains(page, `<details class="editor" open>`) {
				t.Fatalf("%s to %s: %d\n%s", c.what, path, code, page)
			}
			if got := html.UnescapeString(fieldError(t, page)); !strings.Contains(got, c.want) {
				t.Errorf("%s to %s: the error next to the text reads %q; want %q", c.what, path, got, c.want)
			}
			if kept := textarea(t, page); kept != c.payload {
				t.Errorf("%s to %s: the text box holds %q, not the text sent", c.what, path, kept)
			}
			if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 || pgtest.Live(t, st, q) != 0 {
				t.Fatalf("%s to %s moved the message: %d dead, %d live", c.what, path, n, pgtest.Live(t, st, q))
			}
		}
	}

	code, page, _ := b.post("/dlq/message/correct", form(`{"sku": "a-1", "amount": 10}`), nil)
	if code != http.StatusOK || !strings.Contains(page, `data-page="correct"`) || !strings.Contains(page, "would move back to <strong>"+q+"</strong>") {
		t.Fatalf("the preview of an object for an object: %d\n%s", code, page)
	}
}
