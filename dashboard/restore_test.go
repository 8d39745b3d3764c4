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

// A restore or a list of discarded messages asked for wrongly (no queue,
// ids not in the form of an id or too large, an id not discarded, a queue
// name made to reach SQL) is refused on the problem page, saying what is
// wrong, and changes nothing; a read-only server lists the discarded
// messages but offers no restore and refuses one sent anyway.
func TestRestoreRefusals(t *testing.T) {
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
