package dashboard_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// addressAttrs are the attributes of a page that hold an address of the
// dashboard: links, assets, forms, buttons that send a form elsewhere,
// and the addresses the overview's script reads.
var addressAttrs = []string{"href", "src", "action", "formaction", "data-live-src", "data-live-dlq"}

// addresses lists every address a page holds, as "tag attr=value".
func addresses(t *testing.T, page string) [][3]string {
	t.Helper()
	var out [][3]string
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			for _, a := range tok.Attr {
				if slices.Contains(addressAttrs, a.Key) {
					out = append(out, [3]string{tok.Data, a.Key, a.Val})
				}
			}
		}
	}
}

// checkAddresses fails the test for an address of page that is not under
// base: a fragment of the page itself is the only other kind allowed.
// It returns the paths under base that GET opens: links and assets.
func checkAddresses(t *testing.T, base, what, page string) []string {
	t.Helper()
	found := addresses(t, page)
	if len(found) == 0 {
		t.Fatalf("%s holds no address at all:\n%s", what, page)
	}
	var open []string
	for _, a := range found {
		tag, attr, v := a[0], a[1], a[2]
		if strings.HasPrefix(v, "#") && attr == "href" {
			continue
		}
		if !strings.HasPrefix(v, base+"/") || strings.HasPrefix(v, base+base+"/") {
			t.Errorf("%s: <%s %s=%q> is not an address under %s/", what, tag, attr, v, base)
			continue
		}
		if attr == "href" || attr == "src" {
			open = append(open, v)
		}
	}
	return open
}

// Served under a base path (pgbus serve --base-path /pgbus/, behind a
// proxy that forwards /pgbus/ unchanged), the dashboard answers only
// there: every page reached from the overview and every page a form
// sends back holds addresses under it alone, and each one opens; the
// redirects and the session cookie carry it; the base path without its
// slash redirects to the overview, and any path outside it is not found.
func TestBasePathEveryPageAndForm(t *testing.T) {
	t.Parallel()
	const base = "/pgbus"
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, st, "dash_base")
	ids := pgtest.DeadLetterN(t, st, q, 4, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom", Payload: `{"sku": "a-1"}`})
	breaker := pgtest.Name("bank")
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BreakerFailure(ctx, breaker, "503 from the bank"); err != nil {
		t.Fatal(err)
	}
	// Live messages for two pages of the queue's page.
	for range ops.DefaultPageSize + 1 {
		if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: []byte(`{"sku": "a-1"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	token := newToken(t)
	addr := serve(t, st, serverOpts{token: token, allowPayloads: true, basePath: base + "/"})
	root := newBrowser(t, addr)
	b := newBrowserUnder(t, addr, base)

	// Outside the base path there is nothing; the base path redirects.
	for _, p := range []string{"/", "/dlq", "/login", "/static/style.css", "/mcp", "/metrics", "/livez", base + "x/", "/.well-known/oauth-protected-resource"} {
		if code, page, _ := root.get(p); code != http.StatusNotFound || !strings.Contains(page, base+"/") {
			t.Errorf("GET %s outside the base path: %d\n%s", p, code, page)
		}
	}
	if code, _, to := root.get(base + "?refresh=10"); code != http.StatusMovedPermanently || to != base+"/?refresh=10" {
		t.Errorf("GET %s?refresh=10: %d to %q, want a redirect to %s/?refresh=10", base, code, to, base)
	}

	// Not logged in: the login page, under the base path, whose cookie is
	// sent there only.
	if code, _, to := b.get("/dlq?queue=" + q + "_dlq"); code != http.StatusSeeOther || to != base+"/login?next="+url.QueryEscape("/dlq?queue="+q+"_dlq") {
		t.Fatalf("GET %s/dlq before logging in: %d to %q", base, code, to)
	}
	code, page, _ := b.get("/login?next=%2Fdlq")
	if code != http.StatusOK {
		t.Fatalf("the login page: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the login page", page)
	under, _ := url.Parse(b.base + "/")
	outside, _ := url.Parse("http://" + addr + "/")
	if len(b.c.Jar.Cookies(under)) != 1 || len(b.c.Jar.Cookies(outside)) != 0 {
		t.Fatalf("the session cookie is sent to %s/ %d times and to / %d times; want once and never", base, len(b.c.Jar.Cookies(under)), len(b.c.Jar.Cookies(outside)))
	}
	if code, page, to := b.post("/login", url.Values{"csrf": {csrf(t, page)}, "token": {token}, "next": {"/dlq"}}, nil); code != http.StatusSeeOther || to != base+"/dlq" {
		t.Fatalf("log in: %d to %q\n%s", code, to, page)
	}

	// Every page reached by links from the overview, and every asset.
	seen := map[string]bool{}
	todo := []string{base + "/"}
	pages := map[string]string{} // path without query -> a page of it
	for len(todo) > 0 && len(seen) < 200 {
		p := todo[0]
		todo = todo[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		code, body, _ := b.get(strings.TrimPrefix(p, base))
		if code != http.StatusOK {
			t.Errorf("GET %s, linked from a page: %d\n%s", p, code, body)
			continue
		}
		if strings.Contains(p, "/static/") {
			continue
		}
		u, _ := url.Parse(p)
		pages[u.Path] = body
		for _, next := range checkAddresses(t, base, "GET "+p, body) {
			if !seen[next] {
				todo = append(todo, next)
			}
		}
	}
	t.Logf("%d addresses opened, %d pages", len(seen), len(pages))
	if !slices.ContainsFunc(slices.Collect(maps.Keys(seen)), func(p string) bool { return strings.HasPrefix(p, base+"/queues/"+q+"?cursor=") }) {
		t.Errorf("the queue's next page was not opened under %s; the addresses opened: %v", base, slices.Sorted(maps.Keys(seen)))
	}
	for _, want := range []string{"/", "/queues/" + q, "/dlq", "/dlq/messages", "/dlq/message", "/dlq/retry", "/dlq/discard", "/dlq/discarded", "/audit", "/workers", "/circuits"} {
		if _, ok := pages[base+want]; !ok {
			t.Errorf("no link led to %s%s; the pages seen: %v", base, want, slices.Sorted(maps.Keys(pages)))
		}
	}
	// The overview's script polls /live under the base path.
	if live := attrOf(t, pages[base+"/"], "data-live-src"); !strings.HasPrefix(live, base+"/live") {
		t.Errorf("the overview's script polls %q", live)
	} else if code, body, _ := b.do(http.MethodGet, strings.TrimPrefix(live, base), nil, http.Header{"Accept": {"application/json"}}); code != http.StatusOK || !strings.HasPrefix(body, "{") {
		t.Errorf("GET %s: %d\n%s", live, code, body)
	}

	// Every form: each page it sends back holds addresses under the base
	// path only, and the action it asked for is done.
	token2 := csrf(t, pages[base+"/"])
	msg := fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d&payload=1", q, ids[0])
	_, page, _ = b.get(msg)
	for _, action := range []string{"/dlq/selected", "/dlq/message/correct", "/logout"} {
		if !hasAddress(t, page, "action", base+action) {
			t.Errorf("the message page has no form sent to %s%s", base, action)
		}
	}
	form := url.Values{"csrf": {token2}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}, "payload": {`{"sku": "a-2"}`}}
	code, page, _ = b.post("/dlq/message/correct", form, nil)
	if code != http.StatusOK || !hasAddress(t, page, "action", base+"/dlq/message/correct/retry") || !hasAddress(t, page, "formaction", base+"/dlq/message/correct") {
		t.Fatalf("the corrected payload's preview: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the corrected payload's preview", page)
	sealed := attrOfNamed(t, page, "sealed")
	code, page, _ = b.post("/dlq/message/correct/retry", url.Values{"csrf": {token2}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}, "sealed": {sealed}}, nil)
	if code != http.StatusOK || !strings.Contains(page, "corrected payload") {
		t.Fatalf("retry with the corrected payload: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after a corrected retry", page)
	code, page, _ = b.post("/dlq/message/retry", url.Values{"csrf": {token2}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[1])}}, nil)
	if code != http.StatusOK || !strings.Contains(page, "Moved back to "+q) {
		t.Fatalf("retry a message: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after a retry", page)
	code, page, _ = b.post("/dlq/message/discard", url.Values{"csrf": {token2}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[2])}}, nil)
	if code != http.StatusOK || !strings.Contains(page, "discarded") {
		t.Fatalf("discard a message: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after a discard", page)

	// The selection of the list, previewed then retried.
	if !hasAddress(t, pages[base+"/dlq/messages"], "action", base+"/dlq/selected") {
		t.Errorf("the list of dead messages has no selection form sent to %s/dlq/selected", base)
	}
	code, page, _ = b.get(fmt.Sprintf("/dlq/selected?queue=%s_dlq&id=%d&verb=retry", q, ids[3]))
	if code != http.StatusOK || !hasAddress(t, page, "action", base+"/dlq/selected") {
		t.Fatalf("the selection's preview: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the selection's preview", page)
	code, page, _ = b.post("/dlq/selected", url.Values{"csrf": {token2}, "verb": {"retry"}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[3])}}, nil)
	if code != http.StatusOK || !strings.Contains(page, "Retried 1 message") {
		t.Fatalf("retry the selection: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after retrying the selection", page)
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("%d messages of %s are still dead", n, q)
	}

	// A filter's retry, previewed then run.
	more := pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k2", Class: "E2", Message: "boom"})
	code, page, _ = b.get("/dlq/retry?queue=" + q + "_dlq&kind=k2")
	if code != http.StatusOK || !hasAddress(t, page, "action", base+"/dlq/retry") {
		t.Fatalf("the preview of a filter's retry: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the preview of a filter's retry", page)
	confirm := url.Values{"csrf": {token2}, "queue": {q + "_dlq"}, "kind": {"k2"}, "expect": {attrOfNamed(t, page, "expect")}}
	code, page, _ = b.post("/dlq/retry", confirm, nil)
	if code != http.StatusOK || !strings.Contains(page, fmt.Sprintf("Retried %d messages", len(more))) {
		t.Fatalf("a filter's retry: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after a filter's retry", page)

	// The message discarded above, restored from the page of discarded
	// messages after its preview.
	code, page, _ = b.get("/dlq/discarded?queue=" + q)
	if code != http.StatusOK || !hasAddress(t, page, "action", base+"/dlq/restore") {
		t.Fatalf("the discarded messages: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the discarded messages", page)
	code, page, _ = b.get(fmt.Sprintf("/dlq/restore?queue=%s&id=%d", q, ids[2]))
	if code != http.StatusOK || !hasAddress(t, page, "action", base+"/dlq/restore") {
		t.Fatalf("the preview of a restore: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the preview of a restore", page)
	code, page, _ = b.post("/dlq/restore", url.Values{"csrf": {token2}, "queue": {q}, "id": {fmt.Sprint(ids[2])}}, nil)
	if code != http.StatusOK || !strings.Contains(page, "Restored 1 message") {
		t.Fatalf("restore a message: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after a restore", page)

	// Pause and resume from the overview, reset the breaker.
	_, page, _ = b.get("/")
	if !hasAddress(t, page, "formaction", base+"/queues/pause") {
		t.Fatalf("the overview offers no pause under %s:\n%s", base, page)
	}
	for _, verb := range []string{"pause", "resume"} {
		code, page, _ = b.post("/queues/"+verb, url.Values{"csrf": {token2}, "queue": {q}}, nil)
		if code != http.StatusOK || !strings.Contains(page, "Queue "+q+" "+verb) {
			t.Fatalf("%s: %d\n%s", verb, code, page)
		}
		checkAddresses(t, base, "the page after a "+verb, page)
	}
	if !hasAddress(t, pages[base+"/circuits"], "action", base+"/circuits/reset") {
		t.Errorf("the circuits page offers no reset under %s", base)
	}
	code, page, _ = b.post("/circuits/reset", url.Values{"csrf": {token2}, "name": {breaker}}, nil)
	if code != http.StatusOK || !strings.Contains(page, breaker+" reset") {
		t.Fatalf("reset the breaker: %d\n%s", code, page)
	}
	checkAddresses(t, base, "the page after a reset", page)

	// A page the dashboard does not have names the path as the browser
	// asked for it, and the MCP endpoint under the base path.
	code, page, _ = b.get("/nope")
	if code != http.StatusNotFound || !strings.Contains(page, "has no page "+base+"/nope") || !strings.Contains(page, "The MCP endpoint is "+base+"/mcp") {
		t.Errorf("GET %s/nope: %d\n%s", base, code, page)
	}
	checkAddresses(t, base, "the page of a path not found", page)
	// A form from another page of the same site, refused for its missing
	// CSRF token, keeps to the base path too.
	code, page, _ = b.post("/queues/pause", url.Values{"queue": {q}}, nil)
	if code != http.StatusForbidden || !strings.Contains(page, "CSRF") {
		t.Errorf("a form without its CSRF token: %d\n%s", code, page)
	}
	checkAddresses(t, base, "a refusal", page)

	// Logging out goes to the login page under the base path, and ends
	// the session.
	if code, _, to := b.post("/logout", url.Values{"csrf": {token2}}, nil); code != http.StatusSeeOther || to != base+"/login" {
		t.Fatalf("log out: %d to %q", code, to)
	}
	if code, _, to := b.get("/"); code != http.StatusSeeOther || to != base+"/login?next=%2F" {
		t.Fatalf("the overview after logging out: %d to %q", code, to)
	}
}

// The dashboard's handler on its own takes a base path too, and refuses
// one that is not a clean URL path, saying what to give.
func TestBasePathOfTheHandler(t *testing.T) {
	t.Parallel()
	svc := newService(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
	for _, bad := range []string{"pgbus", "/pgbus?x", "/pgbus#x", "/a/../b", "/a//b", "/a b", "/a%20b", "/" + strings.Repeat("a", 300)} {
		if _, err := dashboard.New(svc, dashboard.Config{BasePath: bad}); err == nil || !strings.Contains(err.Error(), "such as /pgbus") {
			t.Errorf("base path %q: %v", bad, err)
		}
	}
	h, err := dashboard.New(svc, dashboard.Config{BasePath: "/ops/pgbus/"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/ops/pgbus/": http.StatusOK, "/ops/pgbus/static/style.css": http.StatusOK, "/ops/pgbus": http.StatusMovedPermanently, "/ops/pgbusx": http.StatusNotFound, "/": http.StatusNotFound, "/static/style.css": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d\n%s", path, rec.Code, want, rec.Body)
		}
		if path == "/ops/pgbus/" {
			checkAddresses(t, "/ops/pgbus", "the overview", rec.Body.String())
			if c := rec.Header().Get("Set-Cookie"); !strings.Contains(c, "Path=/ops/pgbus/;") {
				t.Errorf("the session cookie: %q", c)
			}
		}
	}
}

// hasAddress reports whether page has an attribute attr that is want.
func hasAddress(t *testing.T, page, attr, want string) bool {
	t.Helper()
	for _, a := range addresses(t, page) {
		if a[1] == attr && a[2] == want {
			return true
		}
	}
	return false
}

// attrOf is the value of the first attribute attr of page.
func attrOf(t *testing.T, page, attr string) string {
	t.Helper()
	for _, a := range addresses(t, page) {
		if a[1] == attr {
			return a[2]
		}
	}
	return ""
}

// attrOfNamed is the value of the first input of page named name.
func attrOfNamed(t *testing.T, page, name string) string {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			t.Fatalf("the page has no input named %s:\n%s", name, page)
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			var n, v string
			for _, a := range tok.Attr {
				switch a.Key {
				case "name":
					n = a.Val
				case "value":
					v = a.Val
				}
			}
			if tok.Data == "input" && n == name {
				return v
			}
		}
	}
}
