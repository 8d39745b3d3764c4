package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The list of dead messages shows each one's payload size; ordered by
// size and narrowed to a minimum one, it lists the largest first, its
// next page keeps both, and it offers no retry or discard of the filter,
// which would move the messages of every size; a size that is no number
// is refused.
func TestDeadListBySize(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_size")
	payload := func(n int) pgtest.DeadSpec {
		return pgtest.DeadSpec{Kind: "k", Payload: fmt.Sprintf(`{"p": %q}`, strings.Repeat("x", n))}
	}
	small := pgtest.DeadLetter(t, st, q, payload(10))[0]
	largest := pgtest.DeadLetter(t, st, q, payload(5000))[0]
	rest := pgtest.DeadLetterN(t, st, q, 26, payload(2000))
	b := newBrowser(t, serve(t, st, serverOpts{}))
	ids := regexp.MustCompile(`name="id" value="(\d+)"`)

	code, page, _ := b.get("/dlq/messages?queue=" + q + "&order=largest&min_payload_bytes=1000")
	if code != http.StatusOK {
		t.Fatalf("GET the list by size: %d\n%s", code, page)
	}
	got := ids.FindAllStringSubmatch(page, -1)
	if len(got) != 25 || got[0][1] != fmt.Sprint(largest) || strings.Contains(page, fmt.Sprintf(`value="%d"`, small)) {
		t.Fatalf("first page lists %d messages starting %v; want 25, message %d first, not %d", len(got), got[:min(len(got), 1)], largest, small)
	}
	if !strings.Contains(page, "4.9 KiB") || !strings.Contains(page, `data-bytes="5009"`) {
		t.Errorf("the largest message's size is not shown")
	}
	if strings.Contains(page, "Retry the messages of this filter") || !strings.Contains(page, "does not take a payload size") {
		t.Errorf("a list narrowed by size offers the retry of its filter, which takes no size")
	}
	next := regexp.MustCompile(`href="([^"]*)" rel="next"`).FindStringSubmatch(page)
	if next == nil {
		t.Fatalf("no next page:\n%s", page)
	}
	link := html.UnescapeString(next[1])
	if !strings.Contains(link, "min_payload_bytes=1000") || !strings.Contains(link, "order=largest") {
		t.Fatalf("next page %q does not keep the size and the order", link)
	}
	_, page, _ = b.get(link)
	if got := ids.FindAllStringSubmatch(page, -1); len(got) != 2 || got[1][1] != fmt.Sprint(rest[0]) {
		t.Fatalf("second page lists %v; want the 2 left, the oldest of the same size last", got)
	}

	if code, page, _ := b.get("/dlq/messages?min_payload_bytes=big"); code != http.StatusBadRequest || !strings.Contains(page, "whole number of bytes") {
		t.Errorf("a size that is no number: %d\n%s", code, page)
	}
}
