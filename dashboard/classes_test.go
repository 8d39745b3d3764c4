package dashboard_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The dead-letter page counts by error class across every queue when
// asked: a row a class, the largest first, with its reasons and queues,
// each queue linking to the class's messages there; its filter form
// keeps the view, and the page links back to the groups.
func TestDeadLettersByErrorClass(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	a, b := pgtest.NewQueue(t, st, "dash_cls_a"), pgtest.NewQueue(t, st, "dash_cls_b")
	pgtest.DeadLetterN(t, st, a, 3, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Message: "i/o timeout"})
	pgtest.DeadLetterN(t, st, b, 2, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Reason: store.ReasonNonRetryable, Message: "reset"})
	pgtest.DeadLetterN(t, st, b, 1, pgtest.DeadSpec{Kind: "k", Class: "db.Deadlock", Message: "deadlock"})
	br := newBrowser(t, serve(t, st, serverOpts{}))

	code, page, _ := br.get("/dlq")
	if code != http.StatusOK || !strings.Contains(page, "by=error_class") {
		t.Fatalf("the groups page does not link the count by error class: %d\n%s", code, page)
	}
	code, page, _ = br.get("/dlq?by=error_class")
	if code != http.StatusOK {
		t.Fatalf("GET /dlq?by=error_class: %d\n%s", code, page)
	}
	rows := regexp.MustCompile(`data-class="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(rows) != 2 || rows[0][1] != "net.Timeout" || rows[1][1] != "db.Deadlock" {
		t.Fatalf("classes %v, want net.Timeout then db.Deadlock\n%s", rows, page)
	}
	for _, want := range []string{"6 dead messages in 2 error classes", "max_retries_exceeded (3), non_retryable_error (2)", `name="by" value="error_class"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	link := regexp.MustCompile(`href="(/dlq/messages\?[^"]*)">` + regexp.QuoteMeta(store.DLQName(b)) + `</a> \(2\)`).FindStringSubmatch(page)
	if link == nil {
		t.Fatalf("no link to net.Timeout's messages in %s:\n%s", store.DLQName(b), page)
	}
	_, list, _ := br.get(html.UnescapeString(link[1]))
	if n := strings.Count(list, `href="/dlq/message?`); n != 2 {
		t.Errorf("the class's messages in %s: %d listed, want 2", store.DLQName(b), n)
	}
	if code, page, _ := br.get("/dlq?by=kind"); code == http.StatusOK {
		t.Errorf("an unknown by was taken:\n%s", page)
	}
}
