package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Showing a preview (GET: a link followed, a reload, a browser's prefetch)
// records nothing in the audit log, however often; a preview a person
// submits (a corrected payload, sent by POST) is recorded as the dry run
// it is, and so is each confirmed action.
func TestPreviewPagesLeaveNoAuditEntries(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_previews")
	ids := pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	dlq := q + "_dlq"
	entries := func() string {
		t.Helper()
		page, err := svc.Audit(pgtest.Context(t), ops.AuditRequest{Client: "dashboard", Op: ops.AuditAll})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Items {
			got = append([]string{fmt.Sprintf("%s dry_run=%v", e.Op, strings.Contains(string(e.Arguments), `"dry_run":true`))}, got...)
		}
		return strings.Join(got, ", ")
	}

	previews := map[string]string{
		"/dlq/retry?queue=" + q:   "3 dead messages",
		"/dlq/discard?queue=" + q: "3 dead messages",
		fmt.Sprintf("/dlq/selected?verb=retry&queue=%s&id=%d", dlq, ids[0]):   "1 of 1 selected",
		fmt.Sprintf("/dlq/selected?verb=discard&queue=%s&id=%d", dlq, ids[1]): "1 of 1 selected",
	}
	for range 2 { // and again, as a reload
		for path, want := range previews {
			if code, page, _ := b.get(path); code != http.StatusOK || !strings.Contains(page, want) {
				t.Fatalf("GET %s: %d, no %q\n%s", path, code, want, page)
			}
		}
	}
	if got := entries(); got != "" {
		t.Fatalf("showing previews recorded %s; want no audit entry", got)
	}

	// A corrected payload's preview is sent by the person: recorded.
	_, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s&id=%d", dlq, ids[2]))
	code, page, _ := b.post("/dlq/message/correct", url.Values{"csrf": {csrf(t, page)}, "queue": {dlq}, "id": {fmt.Sprint(ids[2])}, "payload": {`{"sku": "a-1"}`}}, nil)
	if code != http.StatusOK || !strings.Contains(page, `data-page="correct"`) {
		t.Fatalf("preview of a corrected payload: %d\n%s", code, page)
	}
	// A preview confirmed: the action is recorded, not its preview.
	_, page, _ = b.get(fmt.Sprintf("/dlq/selected?verb=retry&queue=%s&id=%d", dlq, ids[0]))
	if code, page, _ := b.post("/dlq/selected", confirmFormOf(t, page, "/dlq/selected"), nil); code != http.StatusOK || !strings.Contains(page, "Retried 1 message") {
		t.Fatalf("confirm the retry: %d\n%s", code, page)
	}
	if got, want := entries(), "dlq_retry dry_run=true, dlq_retry dry_run=false"; got != want {
		t.Fatalf("the dashboard's audit entries, oldest first: %s\nwant the corrected payload's preview and the retry: %s", got, want)
	}
}

// The payload's part of a message page counts the values redacted in the
// payload, not those of the headers and error text, which the notes above
// count: a payload without secrets is not said to have lost any.
func TestPayloadRedactionCountIsThePayloads(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_redacted")
	ids := pgtest.DeadLetter(t, st, q,
		pgtest.DeadSpec{Kind: "k", Message: "login failed: password=hunter2hunter2", Payload: `{"order": 7}`},
		pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: `{"order": 8, "password": "hunter2hunter2"}`},
		pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: `{"order": 9, "note": "[REDACTED]"}`})
	b := newBrowser(t, serve(t, st, serverOpts{allowPayloads: true}))
	payloadPart := func(id int64) string {
		t.Helper()
		code, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d&payload=1", q, id))
		_, part, ok := strings.Cut(page, `<h2 id="pl-h">`)
		if code != http.StatusOK || !ok {
			t.Fatalf("message %d: %d\n%s", id, code, page)
		}
		part, _, _ = strings.Cut(part, "</section>")
		return part
	}
	if part := payloadPart(ids[0]); strings.Contains(part, "redacted") || !strings.Contains(part, "order") {
		t.Errorf("a payload without secrets, its error holding one, shows:\n%s", part)
	}
	if part := payloadPart(ids[1]); !strings.Contains(part, "1 value was redacted.") || strings.Contains(part, "hunter2") {
		t.Errorf("a payload holding a secret shows:\n%s", part)
	}
	// The marker's words in a payload are no secret redacted.
	if part := payloadPart(ids[2]); strings.Contains(part, "was redacted") || !strings.Contains(part, "order") {
		t.Errorf("a payload holding the marker's words, no secret, shows:\n%s", part)
	}
}
