package dashboard_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// No page shows a secret of the shared corpus: not the groups, the list,
// a message with its payload asked for, a retry preview, nor the audit
// log after a retry of the message whose headers held secrets.
func TestPagesRedactTheSecretCorpus(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_secrets")
	var specs []pgtest.DeadSpec
	for _, s := range secrettest.Corpus {
		spec := pgtest.DeadSpec{Kind: "leaky", Class: "LeakError", Message: "failed"}
		switch s.Where {
		case secrettest.Payload:
			spec.Payload = s.JSON
		case secrettest.Header:
			spec.Headers = s.JSON
		case secrettest.Error:
			spec.Message = s.Text
		case secrettest.Backtrace:
			spec.Trace = s.Text
		case secrettest.Kind:
			spec.Kind = s.Text
		}
		specs = append(specs, spec)
	}
	ids := pgtest.DeadLetter(t, st, q, specs...)
	addr := serve(t, st, serverOpts{allowPayloads: true})
	b := newBrowser(t, addr)

	var all strings.Builder
	fetch := func(path string) string {
		t.Helper()
		code, page, _ := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, page)
		}
		all.WriteString(page)
		return page
	}
	fetch("/")
	fetch("/dlq")
	fetch("/dlq?queue=" + q + "&text=failed")
	shown := 0
	for next := "/dlq/messages?queue=" + q; next != ""; {
		page := fetch(next)
		shown += strings.Count(page, `href="/dlq/message?queue=`)
		next = ""
		if m := regexp.MustCompile(`href="([^"]*)" rel="next"`).FindStringSubmatch(page); m != nil {
			next = html.UnescapeString(m[1])
		}
	}
	if shown != len(ids) {
		t.Fatalf("the list's pages link %d messages, want %d", shown, len(ids))
	}
	payloads := 0
	for _, id := range ids {
		page := fetch(fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d&payload=1", q, id))
		if strings.Contains(page, "[REDACTED]") && strings.Contains(page, "ada") {
			payloads++
		}
	}
	if payloads == 0 {
		t.Fatal("no message page showed a redacted payload or headers with their neighbours: the test checks nothing")
	}
	fetch("/dlq/retry?queue=" + q)
	// A retry by ids of every message puts its headers' secrets through
	// the audit log.
	code, page, _ := b.get("/dlq/message?queue=" + q + "_dlq&id=" + fmt.Sprint(ids[0]))
	if code != http.StatusOK {
		t.Fatal(page)
	}
	if code, page, _ := b.post("/dlq/message/retry", url.Values{"csrf": {csrf(t, page)}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}}, nil); code != http.StatusOK || !strings.Contains(page, "retried") {
		t.Fatalf("retry one message: %d\n%s", code, page)
	}
	// A corrected payload typed with every payload secret is previewed
	// redacted, as a stored one is shown.
	typed := map[string]json.RawMessage{}
	for i, s := range secrettest.Corpus {
		if s.Where == secrettest.Payload {
			typed[fmt.Sprintf("s%d", i)] = json.RawMessage(s.JSON)
		}
	}
	typedJSON, _ := json.Marshal(typed)
	_, page, _ = b.get("/dlq/message?queue=" + q + "_dlq&id=" + fmt.Sprint(ids[1]) + "&payload=1")
	code, page, _ = b.post("/dlq/message/correct", url.Values{"csrf": {csrf(t, page)}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[1])}, "show_payload": {"1"}, "payload": {string(typedJSON)}}, nil)
	if code != http.StatusOK || !strings.Contains(page, `data-page="correct"`) {
		t.Fatalf("preview of a corrected payload: %d\n%s", code, page)
	}
	all.WriteString(page)
	fetch("/live")
	fetch("/?window=24h")
	fetch("/audit")
	fetch("/audit?client=dashboard")
	fetch("/workers")
	fetch("/circuits")

	out := all.String()
	secrettest.AssertHidden(t, out)
	secrettest.AssertHidden(t, html.UnescapeString(out))
}

// A group's retry goes through its preview: the confirmation carries the
// preview's expect token, moves exactly those messages, and lands in the
// audit log under the dashboard's name; a confirmation whose messages
// changed since is refused and moves nothing.
func TestRetryGroupAfterPreview(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_retry")
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out after 30s"})
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "refund", Class: "Invalid", Message: "bad amount"})
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)

	f := ops.DeadFilter{Queue: q + "_dlq", Kind: "charge", ErrorClass: "Timeout"}
	preview := "/dlq/retry?queue=" + f.Queue + "&kind=charge&error_class=Timeout"
	code, page, _ := b.get(preview)
	if code != http.StatusOK || !strings.Contains(page, "3 dead messages") || strings.Count(page, `href="/dlq/message?queue=`) != 3 {
		t.Fatalf("preview: %d\n%s", code, page)
	}
	form := confirmForm(t, page)
	if form.Get("expect") == "" || form.Get("kind") != "charge" {
		t.Fatalf("the confirm form carries %v", form)
	}
	// Another message joins the group after the preview: the confirmation
	// is refused, nothing moves.
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out after 31s"})
	code, page, _ = b.post("/dlq/retry", form, nil)
	if code != http.StatusConflict || !strings.Contains(page, "Nothing was retried") || deadCount(t, svc, f) != 4 {
		t.Fatalf("a stale confirmation: %d, %d left\n%s", code, deadCount(t, svc, f), page)
	}
	// In the page's words: no argument of a tool, no dry run.
	if !strings.Contains(page, "changed since the preview (3 then, 4 now)") || strings.Contains(page, "expect") || strings.Contains(page, "dry run") {
		t.Errorf("a stale confirmation's page does not say what changed in its own words:\n%s", page)
	}
	_, page, _ = b.get(preview)
	code, page, _ = b.post("/dlq/retry", confirmForm(t, page), nil)
	if code != http.StatusOK || !strings.Contains(page, "Retried 4 messages") {
		t.Fatalf("confirm: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, f); n != 0 {
		t.Fatalf("%d messages of the group are still dead", n)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 2 {
		t.Fatalf("the other group has %d messages, want its 2", n)
	}
	audit, err := svc.Audit(pgtest.Context(t), ops.AuditRequest{Client: "dashboard", Op: ops.OpDLQRetry})
	if err != nil {
		t.Fatal(err)
	}
	var real []ops.AuditEntry
	for _, e := range audit.Items {
		if !strings.Contains(string(e.Arguments), `"dry_run":true`) {
			real = append(real, e)
		}
	}
	if len(real) != 2 || real[0].IsError || !real[1].IsError || real[0].Transport != "http" || !strings.HasPrefix(real[0].Principal, "token sha256:") {
		t.Fatalf("audit entries of the dashboard's retries: %+v", real)
	}
	link := `<a href="` + html.EscapeString(pageURLOf("/dlq", "queue", f.Queue, "kind", "charge", "error_class", "Timeout")) + `">dlq_retry</a>`
	if code, page, _ := b.get("/audit?client=dashboard"); code != http.StatusOK || !strings.Contains(page, link) {
		t.Fatalf("audit page: %d, no %s\n%s", code, link, page)
	}

	// The other group is discarded the same way.
	code, page, _ = b.get("/dlq/discard?queue=" + q + "&kind=refund")
	if code != http.StatusOK || !strings.Contains(page, "2 dead messages") || !strings.Contains(page, "archive") {
		t.Fatalf("discard preview: %d\n%s", code, page)
	}
	code, page, _ = b.post("/dlq/discard", confirmFormOf(t, page, "/dlq/discard"), nil)
	if code != http.StatusOK || !strings.Contains(page, "Discarded 2 messages") || deadCount(t, svc, ops.DeadFilter{Queue: q}) != 0 {
		t.Fatalf("discard: %d, %d left\n%s", code, deadCount(t, svc, ops.DeadFilter{Queue: q}), page)
	}
	if undo := `<a href="` + html.EscapeString(pageURLOf("/dlq/discarded", "queue", q, "kind", "refund")) + `">Undo: see the discarded messages of ` + q; !strings.Contains(page, undo) {
		t.Errorf("the page after the discard does not link %s, the messages it discarded:\n%s", undo, page)
	}
	if code, page, _ := b.post("/dlq/discard", url.Values{"csrf": {csrf(t, page)}, "queue": {q}}, nil); code != http.StatusBadRequest || !strings.Contains(page, "preview") {
		t.Fatalf("a discard without its preview: %d\n%s", code, page)
	}
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// confirmForm returns the fields of the confirm form of a retry preview.
func confirmForm(t *testing.T, page string) url.Values {
	t.Helper()
	return confirmFormOf(t, page, "/dlq/retry")
}

// confirmFormOf returns the fields of the form of a page posting to action.
func confirmFormOf(t *testing.T, page, action string) url.Values {
	t.Helper()
	_, form, ok := strings.Cut(page, `action="`+action+`"`)
	if !ok {
		t.Fatalf("the page has no confirm form:\n%s", page)
	}
	form, _, _ = strings.Cut(form, "</form>")
	out := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(form, -1) {
		out.Add(m[1], html.UnescapeString(m[2]))
	}
	return out
}

// The dashboard is under the security of /mcp: without the token a page
// sends to the login, an action is refused; a wrong token does not log in;
// a foreign Origin, a form without its CSRF token and any action of a
// read-only server are refused, and nothing moves.
func TestRefusals(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_sec")
	ids := pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	dry, err := svc.DLQRetry(pgtest.Context(t), ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	retry := url.Values{"queue": {q}, "expect": {dry.Expect}}
	token := newToken(t)
	addr := serve(t, st, serverOpts{token: token})

	anon := newBrowser(t, addr)
	if code, _, to := anon.get("/dlq"); code != http.StatusSeeOther || to != "/login?next=%2Fdlq" {
		t.Fatalf("GET /dlq without the token: %d to %q", code, to)
	}
	if code, page, _ := anon.post("/dlq/retry", retry, nil); code != http.StatusUnauthorized {
		t.Fatalf("POST /dlq/retry without the token: %d\n%s", code, page)
	}
	_, page, _ := anon.get("/login")
	if code, page, _ := anon.post("/login", url.Values{"csrf": {csrf(t, page)}, "token": {token + "x"}}, nil); code != http.StatusUnauthorized || !strings.Contains(page, "not the server") {
		t.Fatalf("login with a wrong token: %d\n%s", code, page)
	}
	if code, _, _ := anon.get("/dlq"); code != http.StatusSeeOther {
		t.Fatalf("a wrong token logged in: GET /dlq %d", code)
	}
	// The bearer token works as it does for /mcp, for scripts.
	if code, page, _ := anon.get("/dlq"); code != http.StatusSeeOther {
		t.Fatalf("GET /dlq: %d\n%s", code, page)
	}
	if code, page, _ := anon.do(http.MethodGet, "/dlq", nil, http.Header{"Authorization": {"Bearer " + token}}); code != http.StatusOK || !strings.Contains(page, q) {
		t.Fatalf("GET /dlq with the bearer token: %d\n%s", code, page)
	}
	// A script with the bearer token needs no CSRF token: no browser sends
	// that header by itself. Its form is read like a browser's.
	single := url.Values{"queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}, "verb": {"retry"}}
	if code, page, _ := anon.do(http.MethodPost, "/dlq/selected", single, http.Header{"Authorization": {"Bearer " + token}}); code != http.StatusOK || !strings.Contains(page, "Retried 1 message") {
		t.Fatalf("POST /dlq/selected with the bearer token: %d\n%s", code, page)
	}
	ids = ids[1:]
	dry, err = svc.DLQRetry(pgtest.Context(t), ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	retry = url.Values{"queue": {q}, "expect": {dry.Expect}}

	b := newBrowser(t, addr)
	b.login(token)
	_, page, _ = b.get("/dlq")
	token2 := csrf(t, page)
	foreign := http.Header{"Origin": {"https://evil.example"}}
	withCSRF := url.Values{"csrf": {token2}}
	for k, v := range retry {
		withCSRF[k] = v
	}
	wrongCSRF := token2[:len(token2)-1] + "A"
	if wrongCSRF == token2 {
		wrongCSRF = token2[:len(token2)-1] + "B"
	}
	// Every form, each with what would let it act, is refused from a
	// foreign Origin with its CSRF token, and from the dashboard's own
	// without the token or with a wrong one.
	for _, route := range []struct {
		path string
		// noToken is what the refusal of a form without a valid CSRF token
		// says.
		noToken string
	}{
		{"/login", "not sent from this dashboard"},
		{"/logout", "CSRF"},
		{"/dlq/retry", "CSRF"},
		{"/dlq/discard", "CSRF"},
		{"/dlq/selected", "CSRF"},
		{"/dlq/restore", "CSRF"},
		{"/dlq/message/retry", "CSRF"},
		{"/dlq/message/discard", "CSRF"},
		{"/dlq/message/correct", "CSRF"},
		{"/dlq/message/correct/retry", "CSRF"},
		{"/queues/pause", "CSRF"},
		{"/queues/resume", "CSRF"},
		{"/queues/run-now", "CSRF"},
		{"/circuits/reset", "CSRF"},
		{"/circuits/open", "CSRF"},
	} {
		form := func(csrf string) url.Values {
			f := url.Values{"token": {token}, "id": {fmt.Sprint(ids[0])}, "verb": {"retry"}, "name": {"http:example"}, "for": {"30m"}, "payload": {`{"a":1}`}}
			for k, v := range retry {
				f[k] = v
			}
			if csrf != "" {
				f.Set("csrf", csrf)
			}
			return f
		}
		if code, page, _ := b.post(route.path, form(token2), foreign); code != http.StatusForbidden || !strings.Contains(page, "Origin") {
			t.Fatalf("POST %s with a foreign Origin: %d\n%s", route.path, code, page)
		}
		if code, page, _ := b.post(route.path, form(""), http.Header{"Origin": {"http://" + addr}}); code != http.StatusForbidden || !strings.Contains(page, route.noToken) {
			t.Fatalf("POST %s without a CSRF token: %d\n%s", route.path, code, page)
		}
		if code, page, _ := b.post(route.path, form(wrongCSRF), nil); code != http.StatusForbidden || !strings.Contains(page, route.noToken) {
			t.Fatalf("POST %s with a wrong CSRF token: %d\n%s", route.path, code, page)
		}
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != int64(len(ids)) {
		t.Fatalf("a refused retry moved messages: %d left of %d", n, len(ids))
	}
	// The same form from the dashboard's own origin goes through.
	if code, page, _ := b.post("/dlq/retry", withCSRF, http.Header{"Origin": {"http://" + addr}}); code != http.StatusOK || deadCount(t, svc, ops.DeadFilter{Queue: q}) != 0 {
		t.Fatalf("POST from the dashboard: %d\n%s", code, page)
	}

	// Read-only: no action is shown, and every action is refused.
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	ro := newBrowser(t, serve(t, st, serverOpts{token: token, readOnly: true}))
	ro.login(token)
	_, page, _ = ro.get("/dlq?queue=" + q)
	// The page of discarded messages (/dlq/discarded) is no action.
	if strings.Contains(page, "/dlq/retry") || strings.Contains(page, `/dlq/discard?`) || strings.Contains(page, `/dlq/discard"`) || !strings.Contains(page, "read-only") {
		t.Fatalf("a read-only dead-letter page offers a retry:\n%s", page)
	}
	roCSRF := csrf(t, page) // the logout form's
	if code, page, _ := ro.get("/dlq/retry?queue=" + q); code != http.StatusForbidden || strings.Contains(page, "pgbus serve") {
		t.Fatalf("read-only preview: %d, want 403 without a command line (the server may be pgbus dashboard)\n%s", code, page)
	}
	for _, path := range []string{"/dlq/retry", "/dlq/discard", "/dlq/selected", "/dlq/restore", "/dlq/message/retry", "/dlq/message/discard", "/dlq/message/correct", "/dlq/message/correct/retry", "/queues/pause", "/queues/resume", "/queues/run-now", "/circuits/reset", "/circuits/open"} {
		form := url.Values{"csrf": {roCSRF}, "queue": {q}, "id": {"1"}, "name": {"x"}, "expect": {"1"}, "for": {"30m"}}
		// The dashboard's own refusal, before any operation runs: the
		// service's would come only after a form was taken as an action.
		if code, page, _ := ro.post(path, form, nil); code != http.StatusForbidden || !strings.Contains(page, "the dashboard shows everything but changes nothing") || strings.Contains(page, "pgbus serve") {
			t.Fatalf("read-only POST %s: %d\n%s", path, code, page)
		}
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 2 {
		t.Fatalf("a read-only server moved messages: %d left of 2", n)
	}
}

// pageURLOf is a path with the query of pairs of names and values, in
// their order.
func pageURLOf(p string, kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, url.QueryEscape(kv[i])+"="+url.QueryEscape(kv[i+1]))
	}
	return p + "?" + strings.Join(parts, "&")
}

// The list of every dead message offers to discard them all, as it
// offers to retry them: the preview shows every message of every DLQ, and
// its confirmation discards exactly those.
func TestDiscardEveryDeadMessage(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q1, q2 := pgtest.NewQueue(t, st, "dash_all_a"), pgtest.NewQueue(t, st, "dash_all_b")
	pgtest.DeadLetterN(t, st, q1, 2, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	pgtest.DeadLetterN(t, st, q2, 1, pgtest.DeadSpec{Kind: "mail", Class: "Invalid", Message: "bad address"})
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)

	if code, page, _ := b.get("/dlq/messages"); code != http.StatusOK || !strings.Contains(page, `href="/dlq/discard"`) {
		t.Fatalf("the list of every dead message: %d, no discard link\n%s", code, page)
	}
	code, page, _ := b.get("/dlq/discard")
	if code != http.StatusOK || !strings.Contains(page, "3 dead messages") {
		t.Fatalf("the preview of discarding every dead message: %d\n%s", code, page)
	}
	code, page, _ = b.post("/dlq/discard", confirmFormOf(t, page, "/dlq/discard"), nil)
	if code != http.StatusOK || !strings.Contains(page, "Discarded 3 messages") {
		t.Fatalf("discard every dead message: %d\n%s", code, page)
	}
	if n1, n2 := deadCount(t, svc, ops.DeadFilter{Queue: q1}), deadCount(t, svc, ops.DeadFilter{Queue: q2}); n1 != 0 || n2 != 0 {
		t.Fatalf("%d and %d messages are still dead, want none", n1, n2)
	}
}

// A retry or discard by filter moves at most ops.DefaultBulkLimit
// messages: the page after it says that more may be left, with the
// preview of the next, rather than only how many moved.
func TestBulkDoneSaysMoreMayBeLeft(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	for _, verb := range []string{"discard", "retry"} {
		q := pgtest.NewQueue(t, st, "dash_limit")
		pgtest.DeadLetterN(t, st, q, ops.DefaultBulkLimit+2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
		_, page, _ := b.get("/dlq/" + verb + "?queue=" + q)
		code, page, _ := b.post("/dlq/"+verb, confirmFormOf(t, page, "/dlq/"+verb), nil)
		next := `<a href="/dlq/` + verb + `?queue=` + q + `">preview the next ` + verb + `</a>`
		if code != http.StatusOK || !strings.Contains(page, "1,000 messages") || !strings.Contains(page, next) {
			t.Fatalf("%s of %d messages: %d, no %s\n%s", verb, ops.DefaultBulkLimit+2, code, next, page)
		}
		// The next moves the 2 left, and says nothing of more.
		_, page, _ = b.get("/dlq/" + verb + "?queue=" + q)
		code, page, _ = b.post("/dlq/"+verb, confirmFormOf(t, page, "/dlq/"+verb), nil)
		if code != http.StatusOK || !strings.Contains(page, "2 messages") || strings.Contains(page, "preview the next") {
			t.Fatalf("the next %s, of the 2 messages left: %d\n%s", verb, code, page)
		}
		if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
			t.Fatalf("%d messages are still dead after two of each %s", n, verb)
		}
	}
}
