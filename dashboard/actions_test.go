package dashboard_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Without a token (a loopback server) the first page hands out a session
// at once, marked HttpOnly and SameSite=Strict; the actions of the
// message, overview and circuit pages do what they say, each recorded in
// the audit log as the dashboard's.
func TestActionsWithoutToken(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, st, "dash_act")
	ids := pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	breaker := pgtest.Name("bank")
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.BreakerFailure(ctx, breaker, "503 from the bank"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))

	req, _ := http.NewRequest(http.MethodGet, b.base+"/", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookie := resp.Header.Get("Set-Cookie")
	_, port, _ := strings.Cut(strings.TrimPrefix(b.base, "http://"), ":")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(cookie, "pgbus_session_"+port+"=") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || strings.Contains(cookie, "Secure") {
		t.Fatalf("the first page on loopback: %d, cookie %q", resp.StatusCode, cookie)
	}
	if code, _, to := b.get("/login"); code != http.StatusSeeOther || to != "/" {
		t.Fatalf("GET /login without a token configured: %d to %q", code, to)
	}

	// Discard one message from its page; retry the other.
	msg := func(id int64) string { return fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d", q, id) }
	_, page, _ := b.get(msg(ids[0]))
	form := url.Values{"csrf": {csrf(t, page)}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}}
	if code, page, _ := b.post("/dlq/message/discard", form, nil); code != http.StatusOK || !strings.Contains(page, "discarded") {
		t.Fatalf("discard: %d\n%s", code, page)
	}
	if code, page, _ := b.post("/dlq/message/discard", form, nil); code != http.StatusOK || !strings.Contains(page, "was not discarded") {
		t.Fatalf("discard again: %d\n%s", code, page)
	}
	if code, page, _ := b.get(msg(ids[0])); code != http.StatusNotFound || !strings.Contains(page, "Back to the overview") {
		t.Fatalf("the discarded message's page: %d\n%s", code, page)
	}
	form.Set("id", fmt.Sprint(ids[1]))
	if code, page, _ := b.post("/dlq/message/retry", form, nil); code != http.StatusOK || !strings.Contains(page, "Moved back to "+q) {
		t.Fatalf("retry: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("%d messages still dead", n)
	}

	// Pause and resume from the overview.
	_, page, _ = b.get("/")
	if !strings.Contains(page, `action="/queues/pause"`) {
		t.Fatalf("the overview offers no pause:\n%s", page)
	}
	token := csrf(t, page)
	if code, page, _ := b.post("/queues/pause", url.Values{"csrf": {token}, "queue": {q}}, nil); code != http.StatusOK || !strings.Contains(page, "Queue "+q+" paused") {
		t.Fatalf("pause: %d\n%s", code, page)
	}
	if _, page, _ := b.get("/"); !strings.Contains(page, `action="/queues/resume"`) {
		t.Fatalf("a paused queue's overview offers no resume:\n%s", page)
	}
	if code, page, _ := b.post("/queues/resume", url.Values{"csrf": {token}, "queue": {q}}, nil); code != http.StatusOK || !strings.Contains(page, "Queue "+q+" resumed") {
		t.Fatalf("resume: %d\n%s", code, page)
	}
	if code, page, _ := b.post("/queues/pause", url.Values{"csrf": {token}, "queue": {"no_such_queue"}}, nil); code != http.StatusNotFound {
		t.Fatalf("pause a queue that does not exist: %d\n%s", code, page)
	}

	// Reset the open breaker from the circuits page, which counts the job
	// it holds.
	pgtest.Held(t, st, pgtest.NewQueue(t, st, "dash_held"), breaker)
	_, page, _ = b.get("/circuits")
	if !strings.Contains(page, breaker) || !strings.Contains(page, "503 from the bank") || !strings.Contains(page, `action="/circuits/reset"`) ||
		!strings.Contains(page, "Held jobs") || !strings.Contains(page, `<td class="n">1 / 1</td>
    <td class="n">1</td>`) {
		t.Fatalf("the circuits page:\n%s", page)
	}
	if code, page, _ := b.post("/circuits/reset", url.Values{"csrf": {token}, "name": {breaker}}, nil); code != http.StatusOK || !strings.Contains(page, breaker+" reset") ||
		!strings.Contains(page, "It was open") || !strings.Contains(page, "1 job it held while open is visible now") {
		t.Fatalf("reset: %d\n%s", code, page)
	}
	// A second reset, as from a page opened before the first, says it
	// changed nothing.
	if code, page, _ := b.post("/circuits/reset", url.Values{"csrf": {token}, "name": {breaker}}, nil); code != http.StatusOK || !strings.Contains(page, breaker+" was already closed") {
		t.Fatalf("second reset: %d\n%s", code, page)
	}
	// More jobs held than run at once: the reset says the rest are
	// spread over the cool-off.
	if _, err := st.BreakerFailure(ctx, breaker, "503 from the bank"); err != nil {
		t.Fatal(err)
	}
	many := pgtest.NewQueue(t, st, "dash_many")
	for range ops.ReleaseAtOnce + 5 {
		pgtest.Held(t, st, many, breaker)
	}
	if code, page, _ := b.post("/circuits/reset", url.Values{"csrf": {token}, "name": {breaker}}, nil); code != http.StatusOK ||
		!strings.Contains(page, fmt.Sprintf("%d jobs it held while open are released now, in the order held: the first %d at once, the rest spread over its cool-off (5m at most)", ops.ReleaseAtOnce+5, ops.ReleaseAtOnce)) {
		t.Fatalf("reset of a breaker holding %d jobs: %d\n%s", ops.ReleaseAtOnce+5, code, page)
	}
	cs, err := svc.Circuits(ctx, ops.CircuitsRequest{Name: breaker})
	if err != nil || len(cs.Circuits) != 1 || cs.Circuits[0].State != store.BreakerClosed {
		t.Fatalf("the breaker after its reset: %+v, %v; want it closed", cs, err)
	}

	// Open it from the circuits page for a time it offers; a time that is
	// no duration, or out of range, is refused and changes nothing.
	_, page, _ = b.get("/circuits")
	if !strings.Contains(page, `action="/circuits/open"`) || !strings.Contains(page, `<option selected>30m</option>`) {
		t.Fatalf("the circuits page offers no opening for 30m:\n%s", page)
	}
	for _, bad := range []string{"soon", "200h", ""} {
		if code, page, _ := b.post("/circuits/open", url.Values{"csrf": {token}, "name": {breaker}, "for": {bad}}, nil); code != http.StatusBadRequest {
			t.Fatalf("open for %q: %d\n%s", bad, code, page)
		}
	}
	if cs, _ := svc.Circuits(ctx, ops.CircuitsRequest{Name: breaker}); cs.Circuits[0].State != store.BreakerClosed {
		t.Fatalf("refused openings changed the breaker: %+v", cs.Circuits[0])
	}
	if !strings.Contains(page, `<input type="text" name="reason" maxlength="500"`) {
		t.Fatalf("the circuits page asks no reason:\n%s", page)
	}
	if code, page, _ := b.post("/circuits/open", url.Values{"csrf": {token}, "name": {breaker}, "for": {"2h"}, "reason": {"  <b>bank</b> maintenance "}}, nil); code != http.StatusOK ||
		!strings.Contains(page, breaker+" opened") || !strings.Contains(page, "It was closed, and is open until") {
		t.Fatalf("open for 2h: %d\n%s", code, page)
	} else if !strings.Contains(page, "(in 2 h)") && !strings.Contains(page, "(in 1 h 59 min)") {
		t.Fatalf("open for 2h: the confirmation does not say it is open for about 2 h more:\n%s", page)
	}
	cs, err = svc.Circuits(ctx, ops.CircuitsRequest{Name: breaker})
	if err != nil || cs.Circuits[0].State != store.BreakerOpen || cs.Circuits[0].OpenUntil == nil || cs.Circuits[0].OpenUntil.Before(time.Now().Add(119*time.Minute)) ||
		cs.Circuits[0].OpenedByHand == nil || cs.Circuits[0].OpenedByHand.Reason != "<b>bank</b> maintenance" {
		t.Fatalf("the breaker opened from the dashboard: %+v, %v; want it open two hours, with its reason", cs, err)
	}
	if _, page, _ := b.get("/circuits"); !strings.Contains(page, `opened by hand by dashboard: <q>&lt;b&gt;bank&lt;/b&gt; maintenance</q>`) {
		t.Fatalf("the circuits page does not say who opened the breaker by hand and why, escaped:\n%s", page)
	}
	if _, page, _ := b.get("/circuits"); !strings.Contains(page, `<input type="hidden" name="end_opening_by_hand" value="1"><button type="submit" class="small">End the opening by hand and reset`) {
		t.Fatalf("the circuits page offers no reset ending the opening by hand:\n%s", page)
	}
	if code, page, _ := b.post("/circuits/reset", url.Values{"csrf": {token}, "name": {breaker}}, nil); code != http.StatusBadRequest || !strings.Contains(page, "was opened by hand by dashboard") {
		t.Fatalf("reset of the breaker opened by hand, from a page that did not know it: %d\n%s", code, page)
	}
	if code, page, _ := b.post("/circuits/reset", url.Values{"csrf": {token}, "name": {breaker}, "end_opening_by_hand": {"1"}}, nil); code != http.StatusOK ||
		!strings.Contains(page, `This ends the opening by hand by dashboard (&#34;&lt;b&gt;bank&lt;/b&gt; maintenance&#34;).`) {
		t.Fatalf("reset of the breaker opened by hand: %d\n%s", code, page)
	}

	audit, err := svc.Audit(ctx, ops.AuditRequest{Client: "dashboard", Op: ops.AuditAll})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range audit.Items {
		got = append([]string{e.Op}, got...)
	}
	want := "dlq_discard dlq_discard dlq_retry queue_pause queue_resume queue_pause circuit_reset circuit_reset circuit_reset circuit_open circuit_reset"
	if strings.Join(got, " ") != want {
		t.Fatalf("the dashboard's audit entries, oldest first: %v, want %s", got, want)
	}
	if _, page, _ := b.get("/audit?client=dashboard&op=all"); strings.Count(page, "<tr") != len(got)+1 {
		t.Fatalf("the audit page lists %d rows, want a header and %d entries:\n%s", strings.Count(page, "<tr"), len(audit.Items), page)
	}
	// An operation the log does not record is refused naming the
	// page's own field, op, as it is in the address.
	if code, page, _ := b.get("/audit?op=bogus"); code != http.StatusBadRequest || !strings.Contains(page, "op &#34;bogus&#34; is no operation") || strings.Contains(page, "tool &#34;bogus&#34;") {
		t.Fatalf("/audit?op=bogus: %d; want 400 naming the op field:\n%s", code, page)
	}
	for _, off := range []string{"0", "-5"} {
		if _, page, _ := b.get("/?refresh=" + off); strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "Refresh every 10 s") {
			t.Errorf("/?refresh=%s refreshes, or does not offer to:\n%s", off, page)
		}
	}
	if _, page, _ := b.get("/?refresh=10"); !strings.Contains(page, `<meta http-equiv="refresh" content="10">`) || !strings.Contains(page, `<a href="/">Stop refreshing</a>`) {
		t.Fatalf("the overview refreshing itself:\n%s", page)
	}
	if _, page, _ := b.get("/dlq?queue=" + q); strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, `href="/dlq?queue=`+q+`&amp;refresh=10"`) {
		t.Fatalf("the dead letters not refreshing:\n%s", page)
	}
	if _, page, _ := b.get("/workers"); !strings.Contains(page, "No worker process") {
		t.Fatalf("the workers page without workers:\n%s", page)
	}
}

// The login's next page stays on the dashboard.
func TestLoginNextStaysHere(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	for next, want := range map[string]string{"/dlq?queue=x": "/dlq?queue=x", "//evil.example/": "/", "https://evil.example/": "/", "/\\evil.example": "/", "": "/",
		// Dot segments are resolved in the Location: judged as resolved.
		"/./\\evil.example:18599/stolen": "/", "/../\\evil.example": "/", "/./%5Cevil.example": "/", "/..//x": "/x",
		"/dlq/../queues?q=1": "/queues?q=1", "/./login": "/", "//": "/", "//?tab=x": "/", "//#x": "/"} {
		_, page, _ := b.get("/login?next=" + url.QueryEscape(next))
		code, _, to := b.post("/login", url.Values{"csrf": {csrf(t, page)}, "token": {token}, "next": {next}}, nil)
		if code != http.StatusSeeOther || to != want {
			t.Errorf("login with next %q: %d to %q, want %q", next, code, to, want)
		}
	}
	// Logged in, the login page is no obstacle, and logging out ends the
	// session.
	_, page, _ := b.get("/")
	if code, _, to := b.post("/logout", url.Values{"csrf": {csrf(t, page)}}, nil); code != http.StatusSeeOther || to != "/login" {
		t.Fatalf("logout: %d to %q", code, to)
	}
	if code, _, to := b.get("/"); code != http.StatusSeeOther || !strings.HasPrefix(to, "/login") {
		t.Fatalf("after logout: %d to %q", code, to)
	}
}

// Messages ticked on a list page are retried or discarded after a preview
// of what happens to each.
func TestSelectedMessages(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_sel")
	ids := pgtest.DeadLetterN(t, st, q, 4, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	dlq := q + "_dlq"
	if _, page, _ := b.get("/dlq/messages?queue=" + dlq); strings.Count(page, `type="checkbox" name="id"`) != 4 || !strings.Contains(page, `action="/dlq/selected"`) {
		t.Fatalf("the list of one queue offers no selection:\n%s", page)
	}
	if _, page, _ := b.get("/dlq/messages"); strings.Contains(page, `type="checkbox"`) {
		t.Fatalf("the list of every queue offers a selection, whose ids could name messages of several DLQs:\n%s", page)
	}
	for verb, picked := range map[string][]int64{"retry": ids[:2], "discard": ids[2:3]} {
		query := url.Values{"verb": {verb}, "queue": {dlq}}
		for _, id := range picked {
			query.Add("id", fmt.Sprint(id))
		}
		code, page, _ := b.get("/dlq/selected?" + query.Encode())
		want := fmt.Sprintf("%d of %d selected", len(picked), len(picked))
		// Each id's outcome in words, not its code (would_retry).
		would := map[string]string{"retry": "would be retried", "discard": "would be discarded"}[verb]
		if code != http.StatusOK || !strings.Contains(page, want) || !strings.Contains(page, would) || strings.Contains(page, "would_") {
			t.Fatalf("%s preview: %d\n%s", verb, code, page)
		}
		code, page, _ = b.post("/dlq/selected", confirmFormOf(t, page, "/dlq/selected"), nil)
		done := map[string]string{"retry": "Retried", "discard": "Discarded"}[verb]
		if code != http.StatusOK || !strings.Contains(page, fmt.Sprintf("%s %d message", done, len(picked))) {
			t.Fatalf("%s: %d\n%s", verb, code, page)
		}
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d messages left dead, want the one not selected", n)
	}
	if code, page, _ := b.get("/dlq/selected?verb=retry&queue=" + dlq); code != http.StatusBadRequest || !strings.Contains(page, "Nothing is selected") {
		t.Fatalf("an empty selection: %d\n%s", code, page)
	}
	if code, page, _ := b.get("/dlq/selected?verb=retry&id=7"); code != http.StatusBadRequest || !strings.Contains(page, "names no queue") {
		t.Fatalf("a selection without its queue: %d\n%s", code, page)
	}
}

// The session cookie is Secure over TLS, and whenever the server is
// reached off loopback (SecureCookies), through a TLS proxy.
func TestSecureCookie(t *testing.T) {
	t.Parallel()
	svc := newService(t, pgtest.Store(t))
	for _, c := range []struct {
		secure, tls, want bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		h, err := dashboard.New(svc, dashboard.Config{AuthToken: "a-token", SecureCookies: c.secure})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		if c.tls {
			req.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		cookie := rec.Header().Get("Set-Cookie")
		if rec.Code != http.StatusOK || strings.Contains(cookie, "; Secure") != c.want || !strings.Contains(cookie, "SameSite=Strict") {
			t.Errorf("SecureCookies %v, TLS %v: %d, cookie %q", c.secure, c.tls, rec.Code, cookie)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
	}
}

// Behind a TLS proxy on the same machine the server listens on loopback,
// yet the browser uses HTTPS: the session cookie is Secure when a trusted
// proxy says so (X-Forwarded-Proto: https), and only then, so that the
// browser never sends it over plain HTTP. The header of a peer that is not
// a trusted proxy is not believed.
func TestSecureCookieBehindATLSProxy(t *testing.T) {
	t.Parallel()
	h, err := dashboard.New(newService(t, pgtest.Store(t)), dashboard.Config{AuthToken: "a-token",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		remote, proto string
		want          bool
	}{{"127.0.0.1:40000", "https", true}, {"127.0.0.1:40000", "HTTPS", true}, {"127.0.0.1:40000", "http", false}, {"127.0.0.1:40000", "", false}, {"192.0.2.7:40000", "https", false}} {
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		req.RemoteAddr = c.remote
		if c.proto != "" {
			req.Header.Set("X-Forwarded-Proto", c.proto)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if cookie := rec.Header().Get("Set-Cookie"); rec.Code != http.StatusOK || strings.Contains(cookie, "; Secure") != c.want {
			t.Errorf("from %s with X-Forwarded-Proto %q: %d, cookie %q, want Secure %v", c.remote, c.proto, rec.Code, cookie, c.want)
		}
	}
}

// Logging out ends the session on the server too: its cookie, copied
// before the logout (from a shared machine, a proxy's log), no longer
// opens a page or sends a form.
func TestLogoutEndsTheSessionOnTheServer(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	token := newToken(t)
	addr := serve(t, st, serverOpts{token: token})
	b := newBrowser(t, addr)
	b.login(token)
	_, page, _ := b.get("/")
	u, err := url.Parse(b.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	copied := b.c.Jar.Cookies(u)
	if code, _, to := b.post("/logout", url.Values{"csrf": {csrf(t, page)}}, nil); code != http.StatusSeeOther || to != "/login" {
		t.Fatalf("logout: %d to %q", code, to)
	}
	thief := newBrowser(t, addr)
	thief.c.Jar.SetCookies(u, copied)
	if code, _, to := thief.get("/"); code != http.StatusSeeOther || !strings.HasPrefix(to, "/login") {
		t.Fatalf("the session's cookie after its logout: GET / %d to %q, want the login page", code, to)
	}
	if code, _, _ := thief.post("/queues/pause", url.Values{"csrf": {csrf(t, page)}, "queue": {"x"}}, nil); code != http.StatusUnauthorized {
		t.Fatalf("the session's cookie and CSRF token after its logout: POST %d, want 401", code)
	}
}
