package dashboard_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// injection is text a producer may put in a kind, a header or a payload,
// which a page must show as text.
const injection = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`

// levelQueue creates a queue with three priority levels and sends to it
// one message at level 2, then perLevel1 at level 1, then one at level
// 0: the page lists level 0 first whatever the order sent. The message of
// level 2 carries the injection in its kind, headers and payload, and is
// scheduled an hour ahead. It returns the queue's name and the messages'
// levels and ids as the page lists them.
func levelQueue(t *testing.T, svc *ops.Service, perLevel1 int) (string, []string) {
	t.Helper()
	ctx := pgtest.Context(t)
	q := pgtest.Name("dash_levels")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 3}); err != nil {
		t.Fatal(err)
	}
	send := func(req ops.SendRequest) string {
		t.Helper()
		req.Queue = q
		if req.Payload == nil {
			req.Payload = json.RawMessage(`{"n": 1}`)
		}
		sent, err := svc.Send(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d/%d", sent.Priority, sent.MsgID)
	}
	payload, _ := json.Marshal(map[string]string{"note": injection})
	last := send(ops.SendRequest{Priority: 2, Kind: injection, Headers: map[string]any{"x-note": injection}, Payload: payload, Delay: time.Hour})
	var middle []string
	for range perLevel1 {
		middle = append(middle, send(ops.SendRequest{Priority: 1, Kind: "mail"}))
	}
	first := send(ops.SendRequest{Priority: 0, Kind: "urgent"})
	return q, append(append([]string{first}, middle...), last)
}

var rowRE = regexp.MustCompile(`<tr data-msg="(\d+)" data-state="([a-z_]+)" data-level="(\d+)">`)

// rows are the messages a queue's page lists, as level/id.
func rows(page string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[3]+"/"+m[1])
	}
	return out
}

// A queue's page, linked from the overview, shows its stats and its live
// messages: of a queue with priority levels, every level, level 0 first,
// each with its level, a page at a time through the cursor; in one state
// when asked; payloads only when asked, and everything a producer wrote
// as text. The token is required, a state or cursor it does not know is
// refused saying what to do, and a queue that does not exist, or was
// dropped, is not found.
func TestQueuePage(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q, want := levelQueue(t, svc, ops.DefaultPageSize)
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token, allowPayloads: true}))

	if code, _, to := b.get("/queues/" + q); code != http.StatusSeeOther || to != "/login?next="+url.QueryEscape("/queues/"+q) {
		t.Fatalf("the queue's page without the token: %d to %q; want the login page", code, to)
	}
	b.login(token)
	code, page, _ := b.get("/")
	if code != http.StatusOK || !strings.Contains(page, `<a href="/queues/`+q+`">`+q+`</a>`) {
		t.Fatalf("the overview does not link the queue's page: %d\n%s", code, page)
	}

	// The first page, then the next through the cursor: every message,
	// level 0 first, then level 1 oldest first, then level 2.
	code, page, _ = b.get("/queues/" + q)
	if code != http.StatusOK || !strings.Contains(page, ">Level</th>") || !strings.Contains(page, `<dd data-count="visible">`+fmt.Sprint(len(want)-1)) ||
		!strings.Contains(page, `<dd data-count="scheduled">1</dd>`) || !strings.Contains(page, "Priority levels</dt><dd>3") {
		t.Fatalf("the queue's page: %d, want its stats and a Level column\n%s", code, page)
	}
	got := rows(page)
	if !slices.Equal(got, want[:ops.DefaultPageSize]) {
		t.Fatalf("the first page lists %v, want %v", got, want[:ops.DefaultPageSize])
	}
	if strings.Contains(page, "First page") || !strings.Contains(page, "Show the headers and payloads") || strings.Contains(page, "window.pwned") {
		t.Fatalf("the first page offers a first page, or no payloads, or shows one unasked:\n%s", page)
	}
	next := regexp.MustCompile(`href="([^"]*)" rel="next"`).FindStringSubmatch(page)
	if next == nil {
		t.Fatalf("the first page of %d messages has no next page:\n%s", len(want), page)
	}
	code, page, _ = b.get(html.UnescapeString(next[1]))
	if got = append(got, rows(page)...); code != http.StatusOK || !slices.Equal(got, want) || !strings.Contains(page, "First page") || !strings.Contains(page, "Last page.") {
		t.Fatalf("after the next page (%s, %d): %v, want %v\n%s", next[1], code, got, want, page)
	}

	// The injection, in a kind, a header and a payload, shows as text.
	code, page, _ = b.get("/queues/" + q + "?state=scheduled&payload=1")
	if code != http.StatusOK || !slices.Equal(rows(page), want[len(want)-1:]) {
		t.Fatalf("the scheduled messages: %d, %v; want %v\n%s", code, rows(page), want[len(want)-1:], page)
	}
	if strings.Contains(page, "<script>window") || strings.Contains(page, "<img") || strings.Count(page, "&lt;script&gt;window.pwned=1&lt;/script&gt;") != 4 || !strings.Contains(page, `<option value="scheduled" selected>`) {
		t.Fatalf("the scheduled message's kind, headers (x-note, and pgbus_kind) and payload are not each shown as text, or the filter is not shown:\n%s", page)
	}

	// Without --allow-payloads, the headers are shown when asked, the
	// payloads never.
	hidden := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ = hidden.get("/queues/" + q + "?state=scheduled")
	if code != http.StatusOK || !strings.Contains(page, "Payloads are hidden") || !strings.Contains(page, `href="/queues/`+q+`?state=scheduled&amp;payload=1">Show the headers</a>`) || strings.Contains(page, "x-note") {
		t.Fatalf("the scheduled messages on a server without payloads: %d\n%s", code, page)
	}
	code, page, _ = hidden.get("/queues/" + q + "?state=scheduled&payload=1")
	if code != http.StatusOK || !strings.Contains(page, `&#34;x-note&#34;: &#34;&lt;script&gt;window.pwned=1`) || strings.Contains(page, "&#34;note&#34;") || !strings.Contains(page, "hidden (") {
		t.Fatalf("the headers of the scheduled message on a server without payloads: %d, want the headers shown, the payload hidden\n%s", code, page)
	}

	// A state or cursor the page does not know: what is wrong, and the
	// way to every message.
	every := `href="/queues/` + q + `">Show every live message of the queue, from the first page</a>`
	for _, c := range []struct{ query, says, link string }{
		{"state=dead", `state &#34;dead&#34; is unknown; use one of waiting, in_flight, retrying, scheduled`, every},
		// The next page's cursor of every state, with one state.
		{"state=waiting&" + strings.TrimPrefix(html.UnescapeString(next[1]), "/queues/"+q+"?"), "cursor was issued for another queue or state", every},
		// The first page of the same listing, which is every message.
		{"cursor=nope", "cursor is not valid", `href="/queues/` + q + `">Start again from the first page</a>`},
	} {
		code, page, _ = b.get("/queues/" + q + "?" + c.query)
		if code != http.StatusBadRequest || !strings.Contains(page, c.says) || !strings.Contains(page, c.link) {
			t.Errorf("?%s: %d, want 400 saying %q with a link to the first page\n%s", c.query, code, c.says, page)
		}
	}

	// Not found: a queue that never was, one dropped with its dead
	// messages left, a name that is no queue's.
	pgtest.CreateQueue(t, st, "orphan")
	pgtest.DeadLetterN(t, st, "orphan", 2, pgtest.DeadSpec{Kind: "mail"})
	pgtest.DropOutside(t, st, "orphan")
	for _, c := range []struct {
		path   string
		status int
		says   string
		links  []string
	}{
		{"/queues/nope", http.StatusNotFound, `queue &#34;nope&#34; does not exist`, []string{`href="/"`}},
		{"/queues/orphan", http.StatusNotFound, `queue &#34;orphan&#34; was dropped, so it has no live messages; its DLQ orphan_dlq holds 2 dead messages`, []string{`href="/"`, `href="/dlq?queue=orphan"`}},
		{"/queues/" + url.PathEscape(injection), http.StatusBadRequest, "queue name &#34;&lt;script&gt;window.pwned=1&lt;/script&gt;", []string{`href="/"`}},
		{"/queues/" + q + "_dlq", http.StatusBadRequest, "is the dead-letter queue of " + q, []string{`href="/dlq?queue=` + q + `"`}},
	} {
		code, page, _ := b.get(c.path)
		if code != c.status || !strings.Contains(page, c.says) || strings.Contains(page, "<script>window") || strings.Contains(page, "<img") {
			t.Errorf("GET %s: %d, want %d saying %q\n%s", c.path, code, c.status, c.says, page)
		}
		for _, l := range c.links {
			if !strings.Contains(page, l) {
				t.Errorf("GET %s does not link %s:\n%s", c.path, l, page)
			}
		}
	}
}

// A queue's page pauses and resumes it as the overview does, and the page
// after either, and their audit entries, link back to it.
func TestQueuePagePauses(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_qpause")
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	button := `formaction="/queues/%s" name="queue" value="` + q + `"`
	for _, verb := range []string{"pause", "resume"} {
		_, page, _ := b.get("/queues/" + q)
		if !strings.Contains(page, fmt.Sprintf(button, verb)) || strings.Contains(page, ">paused</span>") != (verb == "resume") {
			t.Fatalf("before the %s, the queue's page:\n%s", verb, page)
		}
		code, page, _ := b.post("/queues/"+verb, url.Values{"csrf": {csrf(t, page)}, "queue": {q}}, nil)
		if code != http.StatusOK || !strings.Contains(page, `<a href="/queues/`+q+`">The page of queue `+q+`</a>`) {
			t.Fatalf("%s from the queue's page: %d\n%s", verb, code, page)
		}
	}
	if _, page, _ := b.get("/queues/" + q); !strings.Contains(page, fmt.Sprintf(button, "pause")) || strings.Contains(page, ">paused</span>") {
		t.Fatalf("after the resume, the queue's page:\n%s", page)
	}
	// The audit log links the queue's page from its pause and resume.
	if _, page, _ := b.get("/audit?client=dashboard"); strings.Count(page, `<a href="/queues/`+q+`">queue_`) != 2 {
		t.Fatalf("the audit log does not link the queue's page from its pause and resume:\n%s", page)
	}
	// Read-only, the page offers no button.
	ro := newBrowser(t, serve(t, st, serverOpts{token: token, readOnly: true}))
	ro.login(token)
	if code, page, _ := ro.get("/queues/" + q); code != http.StatusOK || strings.Contains(page, "formaction") {
		t.Fatalf("the read-only queue's page: %d\n%s", code, page)
	}
}

// A message an open circuit breaker holds says so on its queue's page,
// with the breaker's name shown as text and the circuits page, where it
// is reset, linked.
func TestQueuePageShowsHeldMessages(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_held")
	breaker := "http:" + injection
	held := pgtest.Held(t, st, q, breaker)
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	_, page, _ := b.get("/queues/" + q)
	row := fmt.Sprintf(`<tr data-msg="%d" data-state="scheduled">`, held)
	i := strings.Index(page, row)
	if i < 0 {
		t.Fatalf("no scheduled row of message %d on the queue's page:\n%s", held, page)
	}
	cell := page[i:]
	cell = cell[:strings.Index(cell, "</tr>")]
	if !strings.Contains(cell, `held by circuit breaker <a href="/circuits">`+html.EscapeString(breaker)+`</a>`) || strings.Contains(cell, injection) {
		t.Fatalf("the held message's row does not name its breaker, as text, linking the circuits page:\n%s", cell)
	}
}
