package dashboard_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The overview lists a queue dropped outside pgbus whose DLQ holds dead
// messages, marked dropped, its dead letters linked, with no pause button
// (there is nothing to pause), and names it among the health reasons.
func TestOverviewShowsADroppedQueuesDeadLetters(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	pgtest.CreateQueue(t, st, "kept")
	pgtest.CreateQueue(t, st, "orphan")
	pgtest.DeadLetterN(t, st, "orphan", 2, pgtest.DeadSpec{Kind: "mail"})
	pgtest.DropOutside(t, st, "orphan")
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	code, page, _ := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", code, page)
	}
	row := regexp.MustCompile(`(?s)<tr data-queue="orphan"[^>]*>.*?</tr>`).FindString(page)
	if !strings.Contains(row, `data-state="dropped"`) || !strings.Contains(row, ">dropped</span>") || !strings.Contains(row, `href="/dlq?queue=orphan">2</a>`) || strings.Contains(row, "<button") {
		t.Fatalf("the dropped queue's row:\n%s\nwant it marked dropped, 2 dead letters linked and no button", row)
	}
	kept := regexp.MustCompile(`(?s)<tr data-queue="kept"[^>]*>.*?</tr>`).FindString(page)
	if strings.Contains(kept, "data-state") || strings.Contains(kept, ">dropped</span>") || !strings.Contains(kept, `action="/queues/pause"`) {
		t.Fatalf("the kept queue's row:\n%s\nwant a pause button and no dropped mark", kept)
	}
	if !strings.Contains(page, `queue &#34;orphan&#34; was dropped but its DLQ orphan_dlq holds 2 dead messages`) {
		t.Fatalf("the overview does not name the dropped queue among its reasons:\n%s", page)
	}
	// The live counts say which queue is dropped, for the page to tell a
	// queue dropped after it loaded.
	code, live := b.live()
	states := map[string]bool{}
	for _, q := range live.QueueStats {
		states[q.Queue] = q.Dropped
	}
	if code != http.StatusOK || len(states) != 2 || !states["orphan"] || states["kept"] {
		t.Fatalf("GET /live: %d, dropped %v; want orphan alone dropped", code, states)
	}
}
