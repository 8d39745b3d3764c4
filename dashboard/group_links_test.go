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

// Each group's Retry and Discard links preview exactly that group: a
// group without an error class next to one with (same kind), and two
// patterns of one class, which kind and error class alone would mix.
func TestGroupLinksSelectOnlyTheGroup(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_groups")
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "send_receipt", Class: "", Reason: store.ReasonDeadlineExceeded})
	pgtest.DeadLetterN(t, st, q, 4, pgtest.DeadSpec{Kind: "send_receipt", Class: "context.DeadlineExceeded", Message: "downstream did not answer"})
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "send_receipt", Class: "context.DeadlineExceeded", Message: "database did not answer"})
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)

	code, page, _ := b.get("/dlq?queue=" + q)
	if code != http.StatusOK {
		t.Fatalf("groups page: %d\n%s", code, page)
	}
	for _, verb := range []string{"retry", "discard"} {
		links := regexp.MustCompile(`href="(/dlq/`+verb+`\?[^"]+)"`).FindAllStringSubmatch(page, -1)
		if len(links) != 3 {
			t.Fatalf("%d %s links on the groups page; want one per group, 3\n%s", len(links), verb, page)
		}
		seen := map[string]bool{}
		for _, l := range links {
			link := html.UnescapeString(l[1])
			code, preview, _ := b.get(link)
			m := regexp.MustCompile(`<strong>(\d+) dead messages?</strong>`).FindStringSubmatch(preview)
			if code != http.StatusOK || m == nil {
				t.Fatalf("preview %s: %d\n%s", link, code, preview)
			}
			seen[m[1]] = true
			if !strings.Contains(link, "group=") {
				t.Errorf("link %s does not name its group", link)
			}
		}
		if !seen["3"] || !seen["4"] || !seen["2"] {
			t.Errorf("the %s previews of the 3 groups count %v; want 3, 4 and 2, each group alone", verb, seen)
		}
	}
}
