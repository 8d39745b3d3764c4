package dashboard_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A dead message's page retries it with a corrected payload: the text box
// starts from the payload as shown, saying which values are redacted; a
// text that is not JSON, still holds the redaction marker, is empty or
// too large shows the page again with the reason and the text kept, and
// moves nothing; a good one is previewed, then confirmed, and the live
// message carries it, audited as the dashboard's.
func TestCorrectedPayload(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_fix")
	dlq := q + "_dlq"
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "amount is not a number",
		Payload: `{"sku": "a-1", "amount": "ten", "password": "pw-81fe3"}`})
	id := fmt.Sprint(ids[0])
	other := pgtest.NewQueue(t, st, "dash_fix_other")
	otherIDs := pgtest.DeadLetterN(t, st, other, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{allowPayloads: true}))
	stillDead := func(what string) {
		t.Helper()
		if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 || pgtest.Live(t, st, q) != 0 {
			t.Fatalf("%s moved the message: %d dead, %d live", what, n, pgtest.Live(t, st, q))
		}
	}

	// Not shown, the payload is not in the box, which says how to get it.
	_, page, _ := b.get(pageURLOf("/dlq/message", "queue", dlq, "id", id))
	if !strings.Contains(page, `action="/dlq/message/correct"`) || !strings.Contains(page, `<textarea id="fix-payload" name="payload"`) ||
		textarea(t, page) != "" || !strings.Contains(page, "show the payload</a> to start from it") || !strings.Contains(page, `<script src="/static/editor.js?v=`) {
		t.Fatalf("the message page without its payload offers no empty editor:\n%s", page)
	}
	// Shown, the box starts from it and says what is redacted.
	_, page, _ = b.get(pageURLOf("/dlq/message", "queue", dlq, "id", id, "payload", "1"))
	box := textarea(t, page)
	if !strings.Contains(box, `"amount": "ten"`) || !strings.Contains(box, `"password": "[REDACTED]"`) || strings.Contains(page, "pw-81fe3") ||
		!strings.Contains(page, "1 value reads [REDACTED]") || !strings.Contains(page, `name="show_payload" value="1"`) {
		t.Fatalf("the editor of a shown payload holds %q:\n%s", box, page)
	}
	token := csrf(t, page)
	form := func(payload string) url.Values {
		return url.Values{"csrf": {token}, "queue": {dlq}, "id": {id}, "show_payload": {"1"}, "payload": {payload}}
	}

	for _, c := range []struct {
		what, payload string
		want          []string
	}{
		{"not JSON", "{\"sku\": \"a-1\",\n \"amount\": }", []string{"not valid JSON", "line 2, column 12"}},
		{"the redaction marker", box, []string{"redaction marker [REDACTED]", "$.password", "replace the [REDACTED] values with the real ones"}},
		{"nothing", "  \n", []string{"Type the corrected payload as JSON"}},
		{"too large", `{"note": "` + strings.Repeat("x", 300<<10) + `"}`, []string{"the dashboard takes at most 262,144", "--payload @FILE"}},
	} {
		code, page, _ := b.post("/dlq/message/correct", form(c.payload), nil)
		if code != http.StatusBadRequest || !strings.Contains(page, `data-page="message"`) || !strings.Contains(page, `<details class="editor" open>`) || !strings.Contains(page, `aria-invalid="true"`) {
			t.Fatalf("%s: %d\n%s", c.what, code, page)
		}
		got := html.UnescapeString(fieldError(t, page))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the error next to the text reads %q; want %q", c.what, got, w)
			}
		}
		if kept := textarea(t, page); kept != c.payload && !(strings.TrimSpace(c.payload) == "" && strings.TrimSpace(kept) == "") {
			t.Errorf("%s: the text box holds %.80q, not the text sent", c.what, kept)
		}
		stillDead(c.what)
	}
	// null is a payload like any other: it is previewed, not refused.
	if code, page, _ := b.post("/dlq/message/correct", form("null"), nil); code != http.StatusOK || !strings.Contains(page, `data-page="correct"`) {
		t.Fatalf("a corrected payload of null: %d\n%s", code, page)
	}
	stillDead("the preview of null")
	// The confirmation checks again: a marker sent to it directly is
	// refused as well.
	if code, page, _ := b.post("/dlq/message/correct/retry", form(`{"password": "[REDACTED]"}`), nil); code != http.StatusBadRequest || !strings.Contains(page, "redaction marker") {
		t.Fatalf("a confirmation with the marker: %d\n%s", code, page)
	}
	stillDead("a confirmation with the marker")
	// Without its CSRF token the form is refused.
	noCSRF := form(`{"sku": "a-1", "amount": 10}`)
	noCSRF.Del("csrf")
	for _, path := range []string{"/dlq/message/correct", "/dlq/message/correct/retry"} {
		if code, page, _ := b.post(path, noCSRF, nil); code != http.StatusForbidden || !strings.Contains(page, "CSRF") {
			t.Fatalf("POST %s without the CSRF token: %d\n%s", path, code, page)
		}
	}
	stillDead("a form without its CSRF token")

	// A good payload: previewed (nothing moves), edited again, confirmed.
	fixed := `{"sku": "a-1", "amount": 10, "password": "pw-81fe3"}`
	code, page, _ := b.post("/dlq/message/correct", form(fixed), nil)
	if code != http.StatusOK || !strings.Contains(page, `data-page="correct"`) || !strings.Contains(page, "would move back to <strong>"+q+"</strong>") ||
		!strings.Contains(html.UnescapeString(page), `"amount": 10`) {
		t.Fatalf("the preview: %d\n%s", code, page)
	}
	// It shows the typed secret redacted, as every page does; the form
	// sends it as typed.
	_, preview, _ := strings.Cut(page, `<pre id="fix-preview">`)
	preview, _, _ = strings.Cut(preview, "</pre>")
	if strings.Contains(preview, "pw-81fe3") || !strings.Contains(html.UnescapeString(preview), `"password": "[REDACTED]"`) || !strings.Contains(page, "the retry sends it as you typed it") {
		t.Fatalf("the preview shows the payload as %q:\n%s", preview, page)
	}
	stillDead("the preview")
	// The confirmation carries the payload sealed: the typed secret is
	// nowhere in the page; a seal changed or moved to another message
	// is refused and moves nothing.
	if strings.Contains(page, "pw-81fe3") {
		t.Fatalf("the preview's page holds the typed secret:\n%s", page)
	}
	confirm := confirmFormOf(t, page, "/dlq/message/correct/retry")
	if confirm.Get("payload") != "" || len(confirm.Get("sealed")) < 40 {
		t.Fatalf("the confirmation sends payload %q, sealed %q; want it sealed only", confirm.Get("payload"), confirm.Get("sealed"))
	}
	for what, change := range map[string]func(url.Values){
		"a changed seal": func(f url.Values) {
			s := []byte(f.Get("sealed"))
			s[len(s)/2] ^= 1
			f.Set("sealed", string(s))
		},
		"a seal for another message": func(f url.Values) { f.Set("queue", other+"_dlq"); f.Set("id", fmt.Sprint(otherIDs[0])) },
	} {
		forged := url.Values{}
		for k, v := range confirm {
			forged[k] = slices.Clone(v)
		}
		change(forged)
		if code, page, _ := b.post("/dlq/message/correct/retry", forged, nil); code != http.StatusBadRequest || !strings.Contains(page, "does not hold a payload the dashboard can read") {
			t.Fatalf("%s: %d\n%s", what, code, page)
		}
		stillDead(what)
		if n := deadCount(t, svc, ops.DeadFilter{Queue: other}); n != 1 {
			t.Fatalf("%s moved the other message", what)
		}
	}
	edit := url.Values{"edit": {"1"}}
	for k, v := range confirm {
		edit[k] = v
	}
	if code, page, _ := b.post("/dlq/message/correct", edit, nil); code != http.StatusOK || !strings.Contains(textarea(t, page), `"amount": 10`) || fieldError(t, page) != "" {
		t.Fatalf("edit it again: %d\n%s", code, page)
	}
	stillDead("editing again")
	code, page, _ = b.post("/dlq/message/correct/retry", confirm, nil)
	if code != http.StatusOK || !strings.Contains(page, "Message "+id+" retried with a corrected payload") || !strings.Contains(page, "Moved back to "+q+" as message") ||
		!strings.Contains(page, "with the corrected payload") {
		t.Fatalf("the retry: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("%d messages still dead after the retry", n)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = $1::jsonb`, fixed); n != 1 {
		t.Fatal("the live message does not carry the corrected payload")
	}
	audit, err := svc.Audit(pgtest.Context(t), ops.AuditRequest{Client: "dashboard", Op: ops.OpDLQRetry, Limit: 1})
	if err != nil || len(audit.Items) != 1 {
		t.Fatalf("the dashboard's retries in the audit log: %+v, %v", audit, err)
	}
	var args struct {
		DryRun       bool  `json:"dry_run"`
		PayloadBytes int   `json:"payload_bytes"`
		IDs          []int `json:"ids"`
	}
	if err := json.Unmarshal(audit.Items[0].Arguments, &args); err != nil || args.DryRun || args.PayloadBytes != len(`{"sku":"a-1","amount":10,"password":"pw-81fe3"}`) || audit.Items[0].IsError ||
		strings.Contains(string(audit.Items[0].Arguments), "pw-81fe3") {
		t.Fatalf("the newest audit entry of the dashboard's retries: %s (%v)", audit.Items[0].Arguments, err)
	}
	// Again, the message is gone: the preview says so, moves nothing, and
	// keeps what was typed, as does a payload refused meanwhile.
	for _, typed := range []string{fixed, `{"sku": "b-2",`} {
		code, page, _ := b.post("/dlq/message/correct", form(typed), nil)
		if code != http.StatusOK || !strings.Contains(page, "was not retried") || keptText(page) != typed {
			t.Fatalf("the preview of %s for a message retried already: %d, kept %q\n%s", typed, code, keptText(page), page)
		}
	}
}

// Where payloads are hidden, the editor starts empty and says the text
// replaces the stored payload whole; a read-only server shows no editor
// and refuses its forms.
func TestCorrectedPayloadHiddenAndReadOnly(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_fix_ro")
	dlq := q + "_dlq"
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom", Payload: `{"sku": "hidden-sku-5d2"}`})
	msg := pageURLOf("/dlq/message", "queue", dlq, "id", fmt.Sprint(ids[0]), "payload", "1")

	hidden := newBrowser(t, serve(t, st, serverOpts{}))
	_, page, _ := hidden.get(msg)
	if textarea(t, page) != "" || strings.Contains(page, "hidden-sku-5d2") || !strings.Contains(page, "Payloads are hidden on this server, so the box starts empty") {
		t.Fatalf("the editor where payloads are hidden:\n%s", page)
	}

	token := newToken(t)
	ro := newBrowser(t, serve(t, st, serverOpts{token: token, readOnly: true, allowPayloads: true}))
	ro.login(token)
	_, page, _ = ro.get(msg)
	if strings.Contains(page, "/dlq/message/correct") || strings.Contains(page, "<textarea") || !strings.Contains(page, "hidden-sku-5d2") {
		t.Fatalf("a read-only message page offers the editor:\n%s", page)
	}
	for _, path := range []string{"/dlq/message/correct", "/dlq/message/correct/retry"} {
		form := url.Values{"csrf": {csrf(t, page)}, "queue": {dlq}, "id": {fmt.Sprint(ids[0])}, "payload": {`{"sku": "fixed"}`}}
		if code, page, _ := ro.post(path, form, nil); code != http.StatusForbidden || !strings.Contains(page, "read-only") {
			t.Fatalf("read-only POST %s: %d\n%s", path, code, page)
		}
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("a read-only server moved the message: %d dead", n)
	}
}

// textarea is the text of the page's corrected-payload box.
func textarea(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `<textarea id="fix-payload"`)
	if !ok {
		t.Fatalf("the page has no corrected-payload box:\n%s", page)
	}
	_, rest, _ = strings.Cut(rest, ">")
	text, _, _ := strings.Cut(rest, "</textarea>")
	// The newline after the start tag is the template's: HTML drops it,
	// so that a text starting with a newline keeps it.
	return html.UnescapeString(strings.TrimPrefix(text, "\n"))
}

// fieldError is the error shown next to the box.
func fieldError(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `<p id="fix-error" class="field-error" aria-live="polite">`)
	if !ok {
		t.Fatalf("the page has no error element next to the box:\n%s", page)
	}
	text, _, _ := strings.Cut(rest, "</p>")
	return text
}

// keptText is the typed text a page keeps after its action did not happen.
func keptText(page string) string {
	_, kept, ok := strings.Cut(page, `<textarea class="kept"`)
	if !ok {
		return ""
	}
	_, kept, _ = strings.Cut(kept, ">")
	kept, _, _ = strings.Cut(kept, "</textarea>")
	return html.UnescapeString(kept)
}

// JSON nested a thousand deep is shown as it is, not indented: two spaces
// a level made a dead message's page of a 6 KB payload weigh 4 MB, and the
// preview of a 30 KB corrected payload 50 MB. JSON nested as payloads are
// is still indented.
func TestDeeplyNestedPayloadsStaySmall(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_deep")
	dlq := q + "_dlq"
	nested := func(depth int) string { return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth) }
	ids := pgtest.DeadLetter(t, st, q,
		pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: nested(1000)},
		pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: `{"order": {"id": 7}}`})
	b := newBrowser(t, serve(t, st, serverOpts{allowPayloads: true}))

	code, page, _ := b.get(pageURLOf("/dlq/message", "queue", dlq, "id", fmt.Sprint(ids[0]), "payload", "1"))
	if code != http.StatusOK || len(page) > 256<<10 || !strings.Contains(page, "1}}}}") {
		t.Fatalf("the page of a payload nested 1,000 deep: %d, %d bytes; want it whole in under 256 KiB", code, len(page))
	}
	code, page, _ = b.get(pageURLOf("/dlq/message", "queue", dlq, "id", fmt.Sprint(ids[1]), "payload", "1"))
	if want := html.EscapeString("{\n  \"order\": {\n    \"id\": 7\n  }\n}"); code != http.StatusOK || !strings.Contains(page, want) {
		t.Fatalf("the page of a payload nested 2 deep: %d, not indented as %q\n%s", code, want, page)
	}

	form := url.Values{"csrf": {csrf(t, page)}, "queue": {dlq}, "id": {fmt.Sprint(ids[1])}, "payload": {nested(5000)}}
	code, page, _ = b.post("/dlq/message/correct", form, nil)
	if code != http.StatusOK || !strings.Contains(page, `data-page="correct"`) || len(page) > 1<<20 || !strings.Contains(page, "Shown compact") {
		t.Fatalf("the preview of a corrected payload nested 5,000 deep: %d, %d bytes; want it in under 1 MiB", code, len(page))
	}
}

// A corrected payload sent after its session ended (a restart of the
// server, the 12 hours of a login) or with a stale CSRF token is refused
// before it is read, and the refusal shows the text typed again, so that
// it is not lost; it says that the session ended only when the form came
// with a session cookie.
func TestRefusedFormKeepsTheTypedPayload(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_keep")
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	token := newToken(t)
	addr := serve(t, st, serverOpts{token: token, allowPayloads: true})
	typed := `{"sku": "typed-7", "note": "<b>kept</b>"}`
	form := url.Values{"queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}, "payload": {typed}}
	kept := `<textarea class="kept" readonly rows="8" aria-label="The payload you typed">` + html.EscapeString(typed) + `</textarea>`

	b := newBrowser(t, addr)
	b.login(token)
	form.Set("csrf", "stale")
	if code, page, _ := b.post("/dlq/message/correct", form, nil); code != http.StatusForbidden || !strings.Contains(page, "CSRF") || !strings.Contains(page, kept) {
		t.Errorf("a stale CSRF token: %d, the payload not kept\n%s", code, page)
	}
	_, port, _ := strings.Cut(addr, ":")
	ended := http.Header{"Cookie": {"pgbus_session_" + port + "=AAAA.BBBB"}}
	code, page, _ := newBrowser(t, addr).post("/dlq/message/correct", form, ended)
	if code != http.StatusUnauthorized || !strings.Contains(page, "Your session ended") || !strings.Contains(page, kept) {
		t.Errorf("a session that ended: %d, the payload not kept\n%s", code, page)
	}
	if code, page, _ := newBrowser(t, addr).post("/dlq/message/correct", form, nil); code != http.StatusUnauthorized || strings.Contains(page, "session ended") || !strings.Contains(page, kept) {
		t.Errorf("no session: %d\n%s", code, page)
	}
}
