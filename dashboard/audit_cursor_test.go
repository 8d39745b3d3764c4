package dashboard_test

import (
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A cursor the audit page refuses (of other filters, or made by hand) is
// answered with a link to the first page of the page's own filters, the
// operation (op) included: followed, it lists only what they select.
func TestAuditRefusedCursorLinksTheFirstPageOfItsFilters(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	now := time.Now()
	var entries []store.AuditEntry
	for i, op := range []string{ops.OpQueuePause, ops.OpQueuePause, ops.OpQueueResume} {
		entries = append(entries, store.AuditEntry{Client: "agent", Transport: "stdio", Tool: op, Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{}`),
			At: now.Add(time.Duration(i-5) * time.Minute)})
	}
	if err := st.RecordAudits(pgtest.Context(t), entries); err != nil {
		t.Fatal(err)
	}
	every, err := svc.Audit(pgtest.Context(t), ops.AuditRequest{Client: "agent", Limit: 1})
	if err != nil || every.NextCursor == "" {
		t.Fatalf("audit of every operation: %+v, %v", every, err)
	}
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)

	start := `href="/audit?client=agent&amp;op=queue_pause&amp;since=1h">Start again from the first page</a>`
	for what, cursor := range map[string]string{"of other filters": every.NextCursor, "made by hand": "NQ"} {
		code, page, _ := b.get("/audit?client=agent&op=queue_pause&since=1h&cursor=" + cursor)
		if code != http.StatusBadRequest || !strings.Contains(page, "cursor") || !strings.Contains(page, start) {
			t.Fatalf("a cursor %s: %d; want 400 with the link %s\n%s", what, code, start, page)
		}
		href := regexp.MustCompile(`href="([^"]*)">Start again`).FindStringSubmatch(page)
		code, page, _ = b.get(html.UnescapeString(href[1]))
		if code != http.StatusOK || strings.Count(page, ">queue_pause<") != 2 || strings.Contains(page, ">queue_resume<") {
			t.Fatalf("the first page the link of a cursor %s names: %d; want the 2 pauses only\n%s", what, code, page)
		}
	}
}
