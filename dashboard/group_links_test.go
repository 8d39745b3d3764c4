package dashboard_test

import (
	"html"
	"net/http"
	"regexp"
	"strconv"
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

// A group whose kind holds a secret shows it redacted, and its links still
// select its messages: by its group, not by the kind as shown, which no
// stored kind equals; so does a message's link to its dead neighbours.
func TestGroupLinksOfARedactedKind(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_secret_kind")
	ids := pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "sync password=Hunter2Hunter2", Class: "exec.exit_1", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))

	_, groups, _ := b.get("/dlq?queue=" + q)
	_, msg, _ := b.get("/dlq/message?queue=" + q + "_dlq&id=" + strconv.FormatInt(ids[0], 10))
	for _, page := range []string{groups, msg} {
		if strings.Contains(page, "Hunter2Hunter2") || !strings.Contains(page, "sync password=[REDACTED]") {
			t.Fatalf("the kind is not shown redacted:\n%s", page)
		}
	}
	links := regexp.MustCompile(`href="(/dlq/messages\?[^"]+)"`).FindAllStringSubmatch(groups+msg, -1)
	if len(links) < 2 {
		t.Fatalf("%d links to the messages of the group and of the message; want 2 at least", len(links))
	}
	for _, l := range links {
		link := html.UnescapeString(l[1])
		code, list, _ := b.get(link)
		if n := strings.Count(list, `href="/dlq/message?queue=`); code != http.StatusOK || n != 2 {
			t.Errorf("%s lists %d messages (%d); want the 2 of the kind", link, n, code)
		}
	}
}
