package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// Queues named pause and resume, as the addresses the pause and resume
// forms are sent to, have their pages like any other queue, and their
// buttons pause and resume them; dropped, their pages say so, with their
// dead messages, as any dropped queue's do.
func TestQueuesNamedAsActions(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	for _, q := range []string{"pause", "resume"} {
		pgtest.CreateQueue(t, st, q)
		for _, verb := range []string{"pause", "resume"} {
			code, page, _ := b.get("/queues/" + q)
			button := fmt.Sprintf(`formaction="/queues/%s" name="queue" value="%s"`, verb, q)
			if code != http.StatusOK || !strings.Contains(page, "<h1>Queue "+q) || !strings.Contains(page, button) {
				t.Fatalf("before the %s, the page of queue %s: %d, want its page with the button %s\n%s", verb, q, code, button, page)
			}
			code, page, _ = b.post("/queues/"+verb, url.Values{"csrf": {csrf(t, page)}, "queue": {q}}, nil)
			if code != http.StatusOK || !strings.Contains(page, `<a href="/queues/`+q+`">The page of queue `+q+`</a>`) {
				t.Fatalf("%s of queue %s from its page: %d\n%s", verb, q, code, page)
			}
			_, page, _ = b.get("/queues/" + q)
			if strings.Contains(page, ">paused</span>") != (verb == "pause") {
				t.Fatalf("after the %s, the page of queue %s:\n%s", verb, q, page)
			}
		}
		pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "mail"})
		pgtest.DropOutside(t, st, q)
		says := fmt.Sprintf("queue &#34;%s&#34; was dropped, so it has no live messages; its DLQ %s_dlq holds 2 dead messages", q, q)
		if code, page, _ := b.get("/queues/" + q); code != http.StatusNotFound || !strings.Contains(page, says) || !strings.Contains(page, `href="/dlq?queue=`+q+`"`) {
			t.Errorf("the page of queue %s, dropped: %d, want 404 saying %q and linking its dead messages\n%s", q, code, says, page)
		}
	}
}
