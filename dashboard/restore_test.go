package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Messages discarded from the dashboard are listed on the page of a
// queue's discarded messages, linked from its dead letters and from the
// page after the discard; ticked there, they are previewed, restored into
// the DLQ, and the restore is in the audit log as the dashboard's.
func TestDiscardedMessagesAreRestored(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_undo")
	ids := pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	dlq := q + "_dlq"
	b := newBrowser(t, serve(t, st, serverOpts{}))

	// Discard two of them as a person does: ticked, previewed, confirmed.
	query := url.Values{"verb": {"discard"}, "queue": {dlq}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[1])}}
	_, page, _ := b.get("/dlq/selected?" + query.Encode())
	code, page, _ := b.post("/dlq/selected", confirmFormOf(t, page, "/dlq/selected"), nil)
	undo := `<a href="/dlq/discarded?queue=` + q + `">Undo: see the discarded messages of ` + q
	if code != http.StatusOK || !strings.Contains(page, "Discarded 2 messages") || !strings.Contains(page, undo) {
		t.Fatalf("the page after the discard: %d, want it to link %s\n%s", code, undo, page)
	}
	for _, p := range []string{"/dlq?queue=" + q, "/dlq/messages?queue=" + q} {
		if _, page, _ := b.get(p); !strings.Contains(page, `<a href="/dlq/discarded?queue=`+q+`">The discarded messages of `+q+`</a>`) {
			t.Errorf("GET %s does not link the discarded messages of %s:\n%s", p, q, page)
		}
	}

	code, page, _ = b.get("/dlq/discarded?queue=" + q)
	if code != http.StatusOK || strings.Count(page, `type="checkbox" name="id"`) != 2 || !strings.Contains(page, `action="/dlq/restore"`) ||
		!strings.Contains(page, "upstream timed out") || !strings.Contains(page, "Timeout") {
		t.Fatalf("the discarded messages: %d, want 2 to tick\n%s", code, page)
	}
	for _, id := range ids[:2] {
		if one := html.EscapeString(pageURLOf("/dlq/restore", "queue", q, "id", fmt.Sprint(id))); !strings.Contains(page, `<a href="`+one+`">Restore…</a>`) {
			t.Errorf("message %d has no button of its own to restore it (%s)", id, one)
		}
	}
	if code, page, _ := b.get("/dlq/discarded?queue=" + q + "&kind=mail"); code != http.StatusOK || !strings.Contains(page, "matches these filters") {
		t.Errorf("the discarded messages of another kind: %d\n%s", code, page)
	}
	// One to a page: the next page, with the same filters, lists the other.
	code, page, _ = b.get("/dlq/discarded?queue=" + q + "&error_class=Timeout&since=1h&limit=1")
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">Next page</a>`).FindStringSubmatch(page)
	if code != http.StatusOK || strings.Count(page, `type="checkbox" name="id"`) != 1 || next == nil {
		t.Fatalf("the discarded messages, one listed: %d, want one and a next page\n%s", code, page)
	}
	first := regexp.MustCompile(`name="id" value="(\d+)"`).FindStringSubmatch(page)
	code, page, _ = b.get(html.UnescapeString(next[1]))
	second := regexp.MustCompile(`name="id" value="(\d+)"`).FindStringSubmatch(page)
	if code != http.StatusOK || second == nil || first == nil || second[1] == first[1] || !strings.Contains(page, "Last page.") ||
		!strings.Contains(next[1], "error_class=Timeout") || !strings.Contains(page, ">First page</a>") {
		t.Errorf("the second page (%s): %d, want the other message, the last page, a link to the first\n%s", next[1], code, page)
	}

	// The preview restores nothing and records nothing.
	query = url.Values{"queue": {q}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[1])}}
	code, page, _ = b.get("/dlq/restore?" + query.Encode())
	if code != http.StatusOK || !strings.Contains(page, "2 of 2 selected messages") || strings.Count(page, "would be restored") != 2 || strings.Contains(page, ops.OutcomeWouldRestore) {
		t.Fatalf("the preview of the restore: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d messages dead after the preview, want the 1 not discarded", n)
	}
	code, page, _ = b.post("/dlq/restore", confirmFormOf(t, page, "/dlq/restore"), nil)
	if code != http.StatusOK || !strings.Contains(page, "Restored 2 messages") || !strings.Contains(page, `<a href="/dlq/messages?queue=`+dlq+`">Back to the dead messages of `+dlq+`</a>`) {
		t.Fatalf("the restore: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 3 {
		t.Fatalf("%d messages dead after the restore, want 3", n)
	}
	if _, page, _ := b.get("/dlq/messages?queue=" + dlq); strings.Count(page, `type="checkbox" name="id"`) != 3 {
		t.Errorf("the dead messages after the restore list %d, want 3:\n%s", strings.Count(page, `type="checkbox" name="id"`), page)
	}

	audit, err := svc.Audit(pgtest.Context(t), ops.AuditRequest{Client: "dashboard", Op: ops.OpDLQRestore})
	if err != nil || len(audit.Items) != 1 || audit.Items[0].IsError || strings.Contains(string(audit.Items[0].Arguments), `"dry_run":true`) {
		t.Fatalf("the dashboard's restores in the audit log: %+v, %v; want the one restore", audit.Items, err)
	}
	if _, page, _ := b.get("/audit?client=dashboard"); !strings.Contains(page, `<a href="/dlq?queue=`+q+`">dlq_restore</a>`) {
		t.Fatalf("the audit page does not show the restore:\n%s", page)
	}
}

// A restore or a list of discarded messages asked for wrongly (no queue,
// ids not in the form of an id or too large, an id not discarded, a queue
// name made to reach SQL) is refused on the problem page, saying what is
// wrong, and changes nothing; a read-only server lists the discarded
// messages but offers no restore and refuses one sent anyway.
func TestRestoreRefusals(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, st, "dash_undo_bad")
	ids := pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))
	_, page, _ := b.get("/dlq/discarded?queue=" + q)
	token := csrf(t, page)
	inject := `x"; DROP TABLE pgbus.audit_log; --`

	for _, c := range []struct {
		query string
		code  int
		says  string
	}{
		{"/dlq/discarded", http.StatusBadRequest, "queue is required"},
		{"/dlq/discarded?queue=" + q + "&limit=ten", http.StatusBadRequest, `The limit "ten" is not one this page takes`},
		{"/dlq/discarded?queue=" + q + "&limit=1000", http.StatusBadRequest, "1 to 100"},
		{"/dlq/discarded?queue=" + url.QueryEscape(inject), http.StatusBadRequest, "queue name"},
		{"/dlq/restore?queue=" + q, http.StatusBadRequest, "Nothing is selected"},
		{"/dlq/restore?id=" + fmt.Sprint(ids[0]), http.StatusBadRequest, "queue is required"},
		{"/dlq/restore?queue=" + q + "&id=abc", http.StatusBadRequest, ops.IDForm},
		{"/dlq/restore?queue=" + q + "&id=99999999999999999999", http.StatusBadRequest, "is too large"},
		{"/dlq/restore?queue=" + q + "&id=" + fmt.Sprint(ids[1]), http.StatusNotFound, fmt.Sprintf("message %d is in %s_dlq already", ids[1], q)},
		{"/dlq/restore?queue=" + url.QueryEscape(inject) + "&id=" + fmt.Sprint(ids[0]), http.StatusBadRequest, "queue name"},
	} {
		code, page, _ := b.get(c.query)
		if code != c.code || !strings.Contains(html.UnescapeString(page), c.says) || !strings.Contains(page, `class="problem"`) {
			t.Errorf("GET %s: %d, want %d saying %q\n%s", c.query, code, c.code, c.says, page)
		}
	}
	// Too many ids: the page to pick them from is linked.
	many := url.Values{"queue": {q}}
	for i := range ops.MaxIDs + 1 {
		many.Add("id", fmt.Sprint(i+1))
	}
	if code, page, _ := b.get("/dlq/restore?" + many.Encode()); code != http.StatusBadRequest || !strings.Contains(page, "at most 100") ||
		!strings.Contains(page, `<a href="/dlq/discarded?queue=`+q+`">Lists the discarded messages with their ids</a>`) {
		t.Errorf("a restore of %d ids: %d, want 400 linking the discarded messages\n%s", ops.MaxIDs+1, code, page)
	}
	for _, form := range []url.Values{
		{"queue": {q}},
		{"id": {fmt.Sprint(ids[0])}},
		{"queue": {q}, "id": {"0" + fmt.Sprint(ids[0])}},
		{"queue": {q}, "id": {fmt.Sprint(ids[1])}},
		{"queue": {inject}, "id": {fmt.Sprint(ids[0])}},
	} {
		form.Set("csrf", token)
		if code, page, _ := b.post("/dlq/restore", form, nil); code/100 != 4 || !strings.Contains(page, `class="problem"`) {
			t.Errorf("POST /dlq/restore %v: %d, want a refusal\n%s", form, code, page)
		}
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d messages dead after the refusals, want 1", n)
	}
	if list, err := svc.DLQDiscarded(ctx, ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: q}}); err != nil || len(list.Items) != 1 || list.Items[0].MsgID != ids[0] {
		t.Fatalf("the discarded messages after the refusals: %+v, %v; want message %d", list.Items, err, ids[0])
	}

	// Read-only: listed, not offered, refused.
	ro := newBrowser(t, serve(t, st, serverOpts{readOnly: true}))
	code, page, _ := ro.get("/dlq/discarded?queue=" + q)
	if code != http.StatusOK || !strings.Contains(page, "upstream timed out") || strings.Contains(page, "/dlq/restore") || strings.Contains(page, `type="checkbox"`) {
		t.Fatalf("the discarded messages on a read-only server: %d, want them listed without a restore\n%s", code, page)
	}
	if code, page, _ := ro.get(fmt.Sprintf("/dlq/restore?queue=%s&id=%d", q, ids[0])); code != http.StatusForbidden || !strings.Contains(page, "read-only") {
		t.Errorf("the preview of a restore on a read-only server: %d\n%s", code, page)
	}
	if code, page, _ := ro.post("/dlq/restore", url.Values{"csrf": {csrf(t, page)}, "queue": {q}, "id": {fmt.Sprint(ids[0])}}, nil); code != http.StatusForbidden || !strings.Contains(page, "read-only") {
		t.Errorf("a restore on a read-only server: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d messages dead after the read-only server's refusals, want 1", n)
	}
}
