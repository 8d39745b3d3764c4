package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A dashboard served by a role that may only read refuses a retry with
// 403 and the grants that would allow it: a setting of the deployment,
// not a fault of the page, so its log holds no error for it. A page or
// live counts the role may not read are refused so too. The dead message stays.
func TestRefusedPrivilegeIsForbiddenNotAFault(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, dbURL)
	q := pgtest.NewQueue(t, owner, "dash_perm")
	ids := pgtest.DeadLetter(t, owner, q, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, dbURL, "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	var logs pgtest.SyncBuffer
	b := newBrowser(t, serve(t, pgtest.OpenStore(t, roleURL), serverOpts{logs: &logs}))

	msg := fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d", q, ids[0])
	code, page, _ := b.get(msg)
	if code != http.StatusOK {
		t.Fatalf("the dead message's page, as a role that may read: %d\n%s", code, page)
	}
	form := url.Values{"csrf": {csrf(t, page)}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}}
	code, page, _ = b.post("/dlq/message/retry", form, nil)
	if code != http.StatusForbidden || !strings.Contains(page, "trying again will not help") || !strings.Contains(page, "GRANT SELECT, INSERT, UPDATE, DELETE") {
		t.Errorf("a retry as a role that may only read: %d; want 403 naming the grants\n%s", code, page)
	}
	pgtest.Exec(t, dbURL, "REVOKE SELECT ON pgmq.q_"+q+"_dlq FROM "+role)
	if code, page, _ := b.get(msg); code != http.StatusForbidden || !strings.Contains(page, "GRANT SELECT ON ALL TABLES") {
		t.Errorf("the page of a DLQ the role may not read: %d; want 403 naming the reader's grants\n%s", code, page)
	}
	pgtest.Exec(t, dbURL, "REVOKE SELECT ON pgmq.q_"+q+" FROM "+role)
	if code, body, _ := b.get("/live"); code != http.StatusForbidden || !strings.Contains(body, "GRANT SELECT ON ALL TABLES") {
		t.Errorf("the live counts, with a queue the role may not read: %d; want 403 naming the reader's grants\n%s", code, body)
	}
	if strings.Count(logs.String(), "refused this server's role a privilege") != 1 {
		t.Errorf("the log does not say once that a privilege was refused:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a refused privilege is logged as an error:\n%s", logs.String())
	}
	if n := pgtest.Live(t, owner, q+"_dlq"); n != 1 {
		t.Errorf("%d dead messages left of 1", n)
	}
}
