package dashboard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// An audit entry written before its work that nothing completed (its
// process was killed partway) shows on the audit page as not finished,
// its outcome unknown, with the note that counts may be partial and links
// to what is there now.
func TestAuditPageShowsUnfinishedEntries(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	if _, err := st.StartAudit(pgtest.Context(t), store.AuditEntry{Client: "cli", Transport: "cli", Tool: ops.OpDLQRetry,
		Arguments: json.RawMessage(`{"filter":{"queue":"orders"},"limit":50000}`)}); err != nil {
		t.Fatal(err)
	}
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	code, page, _ := b.get("/audit")
	for _, want := range []string{"not finished: outcome unknown", "1 entry did not finish, outcome unknown", "counts may be partial", `data-unfinished-next`, `href="/dlq">the dead letters</a>`} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("audit page: %d, does not say %q\n%s", code, want, page)
		}
	}
}
