package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// base is where the fuzzed requests are sent: the session cookie is named
// after its port.
const base = "http://127.0.0.1:8080"

// FuzzRequest sends the dashboard requests of any method, path, query,
// cookie and form: its session cookies, CSRF tokens, sealed payloads,
// cursors, ids, filters and corrected payloads are decoders of outside
// input. Whatever arrives, it answers without a server error (5xx) and
// without a panic. A body may name the session's CSRF token as {csrf},
// and sessioned requests carry the session's cookie unless they bring
// their own, so that the forms behind the CSRF check are reached too.
func FuzzRequest(f *testing.F) {
	st := pgtest.OpenStore(f, pgtest.NewDatabase(f))
	svc, err := ops.New(st, ops.Options{AllowPayloads: true})
	if err != nil {
		f.Fatal(err)
	}
	q := pgtest.NewQueue(f, st, "dash_fuzz")
	pgtest.DeadLetterN(f, st, q, 3, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	h, err := dashboard.New(svc, dashboard.Config{})
	if err != nil {
		f.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, base+"/dlq/message?queue="+q+"&id=1", nil))
	m := csrfField.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil || len(rec.Result().Cookies()) == 0 {
		f.Fatalf("the first page: %d, cookies %v, CSRF found %v", rec.Code, rec.Result().Cookies(), m != nil)
	}
	cookie, csrf := rec.Result().Cookies()[0], m[1]
	for _, s := range []struct {
		post         bool
		target, cook string
		session      bool
		body         string
	}{
		{false, "/", "", true, ""},
		{false, "/?window=24h&refresh=10", "", true, ""},
		{false, "/live", "", true, ""},
		{false, "/dlq?queue=" + q + "&kind=k&since=2h", "", true, ""},
		{false, "/dlq/messages?queue=" + q + "&error_class=E&cursor=AAAA&limit=2", "", true, ""},
		{false, "/dlq/message?queue=" + q + "&id=2&payload=1", "", true, ""},
		{false, "/dlq/retry?queue=" + q + "&reason=not_recorded", "", true, ""},
		{false, "/dlq/selected?queue=" + q + "&id=1&id=2", "", true, ""},
		{false, "/dlq/discarded?queue=" + q + "&kind=k&since=2h&cursor=AAAA&limit=2", "", true, ""},
		{false, "/dlq/restore?queue=" + q + "&id=1&id=2", "", true, ""},
		{false, "/queues/" + q + "?state=retrying&cursor=UAEAAAAAAAABGH1MFsdf7Q&payload=1", "", true, ""},
		{false, "/queues/" + q + "_p1?state=%00", "", true, ""},
		{false, "/audit?client=dashboard", "", true, ""},
		{false, "/workers", "", true, ""},
		{false, "/circuits", "", true, ""},
		{false, "/static/style.css", "", false, ""},
		{false, "/login?next=//evil.example", "", false, ""},
		{false, "/", cookie.Name + "=AAAA.BBBB", false, ""},
		{true, "/login", "", false, "token=x&next=/dlq"},
		{true, "/dlq/retry", "", true, "csrf={csrf}&queue=" + q + "&kind=k&expect=3-AAAA"},
		{true, "/dlq/discard", "", true, "csrf={csrf}&queue=" + q + "&expect=1,2"},
		{true, "/dlq/selected", "", true, "csrf={csrf}&queue=" + q + "&id=1&id=x&action=retry"},
		{true, "/dlq/message/retry", "", true, "csrf={csrf}&queue=" + q + "&id=1&clear_deadline=1"},
		{true, "/dlq/message/correct", "", true, "csrf={csrf}&queue=" + q + "&id=2&payload=%7B%22a%22%3A1%7D"},
		{true, "/dlq/message/correct/retry", "", true, "csrf={csrf}&queue=" + q + "&id=2&sealed=AAAA"},
		{true, "/dlq/message/discard", "", true, "csrf={csrf}&queue=" + q + "_dlq&id=3"},
		{true, "/dlq/restore", "", true, "csrf={csrf}&queue=" + q + "&id=3&id=x"},
		{true, "/queues/pause", "", true, "csrf={csrf}&queue=" + q},
		{true, "/queues/resume", "", true, "csrf={csrf}&queue=" + q},
		{true, "/queues/run-now", "", true, "csrf={csrf}&queue=" + q},
		{true, "/circuits/reset", "", true, "csrf={csrf}&name=http:example"},
		{true, "/circuits/open", "", true, "csrf={csrf}&name=http:example&for=30m"},
		{true, "/logout", "", true, "csrf=nope"},
	} {
		f.Add(s.post, s.target, s.cook, s.session, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, post bool, target, cook string, session bool, body []byte) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target // as every request line's target is
		}
		method := http.MethodGet
		if post {
			method = http.MethodPost
		}
		req, err := http.NewRequest(method, base+target, strings.NewReader(strings.ReplaceAll(string(body), "{csrf}", csrf)))
		if err != nil {
			return // not a request a client can send
		}
		req.RemoteAddr = "127.0.0.1:40000"
		if post {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cook != "" {
			req.Header.Set("Cookie", cook)
		} else if session {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("%s %s (cookie %q, body %q): %d %s", method, target, cook, body, rec.Code, rec.Body.String())
		}
	})
}
