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

// An unfinished entry whose operation still runs in another process (the
// session it holds is there) shows as still running; once that session
// ends, as not finished, saying the session that ran it ended.
func TestAuditPageTellsRunningFromStopped(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	run, err := st.HoldAuditRun(ctx)
	if err != nil || run == nil {
		t.Fatalf("hold a session: %v, %v", run, err)
	}
	defer run.Release(ctx)
	if _, err := st.StartAudit(ctx, store.AuditEntry{Client: "cli", Transport: "cli", Tool: ops.OpDLQRetry,
		Arguments: json.RawMessage(`{"filter":{"queue":"orders"}}`), RunPID: run.PID, RunKey: run.Key}); err != nil {
		t.Fatal(err)
	}
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	code, page, _ := b.get("/audit")
	for _, want := range []string{"data-running>still running</span>", "1 entry is still running", "still running, in database session"} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("audit page while the operation runs: %d, does not say %q\n%s", code, want, page)
		}
	}
	if strings.Contains(page, "not finished: outcome unknown") {
		t.Errorf("audit page while the operation runs says it did not finish\n%s", page)
	}
	run.Release(ctx)
	code, page, _ = b.get("/audit")
	for _, want := range []string{"not finished: outcome unknown", "1 entry did not finish, outcome unknown", "the database session that ran it ended", "counts may be partial"} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("audit page once the session ended: %d, does not say %q\n%s", code, want, page)
		}
	}
	if strings.Contains(page, "data-running") {
		t.Errorf("audit page once the session ended says it still runs\n%s", page)
	}
}
