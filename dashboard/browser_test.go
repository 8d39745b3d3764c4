package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/demo"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// envScreenshots, set to 1, makes TestBrowser write its screenshots into
// the repository's docs folder, where the README shows them.
const envScreenshots = "PGBUS_UPDATE_SCREENSHOTS"

// chrome starts a headless Chromium for the test. The browser tests are
// part of the suite: without Chromium they fail, saying how to install it.
func chrome(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("the dashboard's browser tests need Chromium, and found none on PATH (chromium, chromium-browser, google-chrome): install Debian's chromium package (apt-get install chromium), as .ci/run does")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860),
		// A second site for the foreign-Origin check, served on loopback.
		chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"),
		// Chromium leaves a directory of its own in TMPDIR when it is
		// stopped (its single-instance socket): one the test removes.
		chromedp.Env("TMPDIR="+shortTempDir(t)),
	)
	// Chromium now and then exits as it starts, without a word, when the
	// machine is busy with the other packages' tests: a start is tried
	// three times, and each failure is logged.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		// Generous: the test suite runs many packages at once.
		ctx, cancelTimeout := context.WithTimeout(ctx, 10*time.Minute)
		stop := func() { cancelTimeout(); cancel(); cancelAlloc() }
		if err = chromedp.Do(ctx); err == nil {
			t.Cleanup(stop)
			return ctx
		}
		stop()
		t.Logf("start %s, attempt %d: %v", path, attempt, err)
		if !strings.Contains(err.Error(), "chrome failed to start") {
			break
		}
	}
	t.Fatalf("start %s: %v", path, err)
	return nil
}

// shortTempDir is a directory removed when the test ends, named short:
// a socket's path must fit in 108 bytes, which t.TempDir, named after
// the test, can pass.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// page waits for the dashboard page named (the template on its main
// element), parsed whole: the browser shows a page as its HTML comes, and
// on a busy machine its main element may be on screen long before the
// rows of a long list below it. The caller's context bounds the wait.
func page(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.WaitVisible(chromedp.CSS(`main[data-page="`+name+`"]`)),
		chromedp.Poll[chromedp.Void](`document.readyState === "complete"`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
}

// tab drives one browser tab for a test, failing it on the first error.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// stepTimeout bounds the steps of one do: a page that never shows what a
// step waits for (an error page in place of the one expected) fails the
// test saying what it shows, rather than holding it until the package's
// timeout.
const stepTimeout = 2 * time.Minute

// do runs steps.
func (b tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v; the page shows: %.2000s", what, err, b.shown())
	}
}

// shown is the text of the page the tab shows, or why it could not be
// read.
func (b tab) shown() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return fmt.Sprintf("(unread: %v)", err)
	}
	return text
}

// status runs steps that load a page, and returns its HTTP status.
func (b tab) status(what string, steps ...chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, steps...)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return resp.Status
}

// text is the visible text of the first element sel selects.
func (b tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read the text of %s: %v", sel, err)
	}
	return s
}

// count is how many elements sel selects now.
func (b tab) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	if err != nil {
		b.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// location is the tab's URL.
func (b tab) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return loc
}

// screenshot is a PNG of the whole page.
func (b tab) screenshot() []byte {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}

// A person logs in with the token, finds the demo's dead-letter groups,
// opens a group and a message, and retries a group after its preview:
// the messages leave the DLQ and the audit log names the dashboard. The
// browser is refused without the token, from a foreign origin, without
// the CSRF token, and on a read-only server.
func TestBrowser(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	demoCtx, cancelDemo := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelDemo()
	rep, err := demo.Run(demoCtx, st, svc, demo.Options{Timeout: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dead.Groups) < 3 {
		t.Fatalf("the demo left %d dead-letter groups; the test needs several", len(rep.Dead.Groups))
	}
	token := newToken(t)
	base := "http://" + serve(t, st, serverOpts{token: token})

	// Without the token: the login page, which a wrong token does not pass.
	b.do("open the dead letters without logging in", chromedp.Navigate(base+"/dlq"), page("login"))
	if loc := b.location(); !strings.HasSuffix(loc, "/login?next=%2Fdlq") {
		t.Fatalf("without the token /dlq went to %s, not the login page", loc)
	}
	if code := b.status("log in with a wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-"+token), chromedp.Submit(chromedp.ID("token"))); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: status %d", code)
	}
	if text := b.text(".problem"); !strings.Contains(text, "not the server's token") {
		t.Fatalf("a wrong token: %q", text)
	}
	b.do("log in with the token", chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), page("groups"))
	if n := b.count("li.group"); n != len(rep.Dead.Groups) {
		t.Fatalf("the page shows %d groups, the demo left %d", n, len(rep.Dead.Groups))
	}
	text := b.text("ol.groups")
	for _, g := range rep.Dead.Groups {
		if !strings.Contains(text, g.Kind) || !strings.Contains(text, g.ErrorClass) {
			t.Fatalf("the groups do not show %s · %s:\n%s", g.Kind, g.ErrorClass, text)
		}
	}

	// Screenshots of the overview and the dead letters, for the README.
	b.do("open the overview", chromedp.Navigate(base+"/"), page("overview"))
	saveScreenshot(t, "dashboard-overview.png", b.screenshot())
	b.do("open the dead letters", chromedp.Navigate(base+"/dlq"), page("groups"))
	saveScreenshot(t, "dashboard-dead-letters.png", b.screenshot())

	// A group opens its messages; a message opens its dead-letter block.
	b.do("open the largest group", chromedp.Click(chromedp.CSS("li.group h2 a")), page("list"))
	largest := rep.Dead.Groups[0]
	if want := deadCount(t, svc, ops.DeadFilter{Queue: largest.DLQ, Kind: largest.Kind, ErrorClass: largest.ErrorClass}); int64(b.count("tbody tr")) != min(want, ops.DefaultPageSize) {
		t.Fatalf("the largest group's list shows %d messages, want %d", b.count("tbody tr"), min(want, ops.DefaultPageSize))
	}
	b.do("open a message", chromedp.Click(chromedp.CSS("tbody th a")), page("message"))
	text = b.text("main")
	for _, want := range []string{"Why it died", "Reason", largest.ErrorClass, "Failures", "Headers", "Payloads are hidden"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the message page lacks %q:\n%s", want, text)
		}
	}

	// Retry a group after its preview; the preview's form without its
	// CSRF token is refused first.
	const retryLink = `li.group:nth-of-type(2) a[href^="/dlq/retry"]`
	b.do("open the dead letters", chromedp.Navigate(base+"/dlq"), page("groups"))
	attr, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(retryLink), "href"))
	if err != nil || !attr.Exists {
		t.Fatalf("the second group has no retry link: %v", err)
	}
	u, err := url.Parse(attr.Value)
	if err != nil {
		t.Fatal(err)
	}
	group := ops.DeadFilter{Queue: u.Query().Get("queue"), Kind: u.Query().Get("kind"), ErrorClass: u.Query().Get("error_class")}
	count := deadCount(t, svc, group)
	b.do("preview the retry", chromedp.Click(chromedp.CSS(retryLink)), page("bulk"))
	if text, n := b.text(".lead"), b.count("tbody tr"); !strings.Contains(text, fmt.Sprintf("%d dead message", count)) || int64(n) != min(count, 100) {
		t.Fatalf("the preview says %q and lists %d messages; the group has %d", text, n, count)
	}
	b.do("drop the CSRF token", chromedp.Evaluate[chromedp.Void](`document.querySelector('form.confirm input[name=csrf]').remove()`))
	if code := b.status("confirm without the CSRF token", chromedp.Click(chromedp.CSS("form.confirm button"))); code != http.StatusForbidden {
		t.Fatalf("a confirmation without its CSRF token: status %d", code)
	}
	if text := b.text(".problem"); !strings.Contains(text, "CSRF") || deadCount(t, svc, group) != count {
		t.Fatalf("a confirmation without its CSRF token: %q, %d of %d messages left", text, deadCount(t, svc, group), count)
	}
	b.do("preview the retry again, paced", chromedp.Navigate(base+u.RequestURI()), page("bulk"),
		chromedp.SendKeys(chromedp.CSS("form.confirm input[name=rate]"), "1000"))
	if code := b.status("confirm the preview", chromedp.Click(chromedp.CSS("form.confirm button"))); code != http.StatusOK {
		t.Fatalf("the confirmation: status %d", code)
	}
	if text, want := b.text("h1"), fmt.Sprintf("Retried %d messages", count); text != want {
		t.Fatalf("after the confirmation: %q, want %q", text, want)
	}
	if text := b.text("#paced"); !strings.Contains(text, "one after another") {
		t.Fatalf("after a paced confirmation: %q, want it to say the messages are paced", text)
	}
	if n := deadCount(t, svc, group); n != 0 {
		t.Fatalf("%d messages of the retried group are still dead", n)
	}
	b.do("see the group gone", chromedp.Navigate(base+pageURL("/dlq/messages", group)), page("list"), chromedp.WaitVisible(chromedp.CSS(".empty")))
	b.do("see the audit entry", chromedp.Navigate(base+"/dlq"), page("groups"), chromedp.Click(chromedp.CSS(`a[href="/audit"]`)), page("audit"),
		chromedp.Click(chromedp.CSS(`a[href="/audit?client=dashboard"]`)), page("audit"))
	if text := b.text("tbody tr:first-child"); !strings.Contains(text, "dlq_retry") || !strings.Contains(text, "dashboard") {
		t.Fatalf("the newest audit entry of the dashboard: %q", text)
	}
	audit, err := svc.Audit(pgtest.Context(t), ops.AuditRequest{Client: "dashboard", Limit: 1})
	if err != nil || len(audit.Items) != 1 || audit.Items[0].IsError || strings.Contains(string(audit.Items[0].Arguments), `"dry_run":true`) {
		t.Fatalf("the newest audit entry of the dashboard is not its retry: %+v, %v", audit.Items, err)
	}

	// A form on another site, posted to the dashboard: refused for its
	// Origin, and nothing moves.
	other := rep.Dead.Groups[0]
	otherF := ops.DeadFilter{Queue: other.DLQ, Kind: other.Kind, ErrorClass: other.ErrorClass}
	dry, err := svc.DLQRetry(pgtest.Context(t), ops.DLQRetryRequest{Filter: otherF, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	before := deadCount(t, svc, otherF)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/dlq/retry"><input name="queue" value="%s"><input name="kind" value="%s"><input name="error_class" value="%s"><input name="expect" value="%s"><input name="csrf" value="guessed"><button id="go">go</button></form>`,
			base, html.EscapeString(otherF.Queue), html.EscapeString(otherF.Kind), html.EscapeString(otherF.ErrorClass), html.EscapeString(dry.Expect))
	}))
	t.Cleanup(evil.Close)
	b.do("open a page of another site", chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "evil.test", 1)), chromedp.WaitVisible(chromedp.ID("go")))
	if code := b.status("post from another site", chromedp.Click(chromedp.ID("go"))); code != http.StatusForbidden {
		t.Fatalf("a form of another site: status %d", code)
	}
	if text := b.text("body"); !strings.Contains(text, `Origin "http://evil.test`) || deadCount(t, svc, otherF) != before {
		t.Fatalf("a form of another site: %q; %d of %d messages left", text, deadCount(t, svc, otherF), before)
	}

	// A read-only server shows no action and refuses one sent anyway.
	_, port, _ := strings.Cut(serve(t, st, serverOpts{token: token, readOnly: true}), ":")
	ro := "http://localhost:" + port
	b.do("log in to the read-only server", chromedp.Navigate(ro+"/dlq"), page("login"),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")), page("groups"))
	// An action is a link to a form, a form that posts, or a button that
	// posts another form (the overview's pause and resume).
	const actions = `a[href^="/dlq/retry"], a[href^="/dlq/discard"], form[method="post"]:not(.logout), button[formaction]`
	if n, text := b.count(actions), b.text("header"); n != 0 || !strings.Contains(text, "read-only") {
		t.Fatalf("the read-only server offers %d retries; its header says %q", n, text)
	}
	b.do("open the read-only overview", chromedp.Navigate(ro+"/"), page("overview"))
	if n, rows := b.count(actions), b.count("tr[data-queue]"); n != 0 || rows == 0 {
		t.Fatalf("the read-only overview offers %d actions on its %d queues; want none", n, rows)
	}
	b.do("back to the dead letters", chromedp.Navigate(ro+"/dlq"), page("groups"))
	post := fmt.Sprintf(`(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/dlq/retry';
		for (const [k, v] of Object.entries({csrf: document.querySelector('input[name=csrf]').value, queue: %q, kind: %q, error_class: %q, expect: %q})) {
			const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
		document.body.appendChild(f); f.submit(); })()`, otherF.Queue, otherF.Kind, otherF.ErrorClass, dry.Expect)
	if code := b.status("post a retry to the read-only server", chromedp.Evaluate[chromedp.Void](post)); code != http.StatusForbidden {
		t.Fatalf("a retry on the read-only server: status %d", code)
	}
	if text := b.text(".problem"); !strings.Contains(text, "read-only") || deadCount(t, svc, otherF) != before {
		t.Fatalf("a retry on the read-only server: %q; %d of %d messages left", text, deadCount(t, svc, otherF), before)
	}
}

// pageURL is a dashboard path with a filter in its query.
func pageURL(p string, f ops.DeadFilter) string {
	q := url.Values{}
	for k, v := range map[string]string{"queue": f.Queue, "kind": f.Kind, "error_class": f.ErrorClass} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return p + "?" + q.Encode()
}

// saveScreenshot checks a screenshot is a PNG and, when asked
// (PGBUS_UPDATE_SCREENSHOTS=1), writes it to the docs folder.
func saveScreenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("screenshot %s is not a PNG of a page (%d bytes)", name, len(png))
	}
	dir := t.TempDir()
	if os.Getenv(envScreenshots) == "1" {
		dir = filepath.Join("..", "docs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The overview updates its counts in place: messages sent and
// dead-lettered after it loaded show up in its queue's row and in the
// health line without a reload (the script runs under the dashboard's
// Content-Security-Policy).
func TestBrowserLiveCounts(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_live")
	base := "http://" + serve(t, st, serverOpts{})
	row := `tr[data-queue="` + q + `"]`
	b.do("open the overview", chromedp.Navigate(base+"/"), page("overview"), chromedp.WaitVisible(chromedp.CSS(row)),
		// A mark that a reload would wipe out.
		chromedp.Evaluate[chromedp.Void](`window.pgbusNotReloaded = true`))
	if ready, dead := b.text(row+` td[data-count="visible"]`), b.text(row+` td[data-count="dlq_depth"]`); ready != "0" || dead != "0" {
		t.Fatalf("the new queue shows %s ready and %s dead, want 0 and 0", ready, dead)
	}
	for range 3 {
		if _, err := svc.Send(pgtest.Context(t), ops.SendRequest{Queue: q, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	// The script asks every 5 s; the timeout is generous for a loaded
	// machine.
	wait := fmt.Sprintf(`(() => {
		const cell = (k) => document.querySelector(%q + ' td[data-count="' + k + '"]');
		return cell("visible").textContent === "3" && cell("dlq_depth").querySelector("a") !== null &&
			cell("dlq_depth").textContent === "2" && document.querySelector('[data-live="dead_messages"]').textContent === "2";
	})()`, row)
	b.do("wait for the new counts", chromedp.Poll[chromedp.Void](wait, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	if kept, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`window.pgbusNotReloaded === true`)); err != nil || !kept {
		t.Fatalf("the page was reloaded to show the counts (%v)", err)
	}
	if href, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(row+` td[data-count="dlq_depth"] a`), "href")); err != nil || href.Value != "/dlq?queue="+q {
		t.Fatalf("the dead letters' count links %q (%v), want /dlq?queue=%s", href.Value, err, q)
	}
	if note, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("[data-live-note]").textContent`)); err != nil || strings.Contains(note, "paused") {
		t.Fatalf("the note says %q before any queue changed (%v)", note, err)
	}
	// A queue that grows past the exact-count limit while the page is
	// open gets its ready count, and the backlog, marked "~" as
	// estimates; back under it, the marks go.
	pgtest.SettleRowStats(t, st, "pgmq.q_"+q)
	st.SetExactCountLimit(2)
	marked := func(on bool) string {
		return fmt.Sprintf(`(() => {
			const cell = document.querySelector(%q + ' td[data-count="visible"]');
			const backlog = document.querySelector('[data-live="backlog"]');
			const mark = (el) => getComputedStyle(el, "::before").content === '"~"' && el.title.startsWith("An estimate");
			return cell.textContent === "3" && mark(cell) === %t && mark(backlog) === %t;
		})()`, row, on, on)
	}
	b.do("wait for the estimate's marks", chromedp.Poll[chromedp.Void](marked(true), chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	st.SetExactCountLimit(0)
	b.do("wait for the marks to go", chromedp.Poll[chromedp.Void](marked(false), chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	// Its Pause button is stale once another operator pauses the queue.
	if _, err := svc.QueuePause(pgtest.Context(t), ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	b.do("wait for the note", chromedp.Poll[chromedp.Void](`(() => { const n = document.querySelector("[data-live-note]"); return !n.hidden && n.textContent.includes("paused or resumed since this page was loaded") && n.textContent.includes("The health verdict is now"); })()`,
		chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	// Resumed, the queue is as the page shows it again: that note goes, the
	// verdict's stays, once (the backlog, left without workers, may have
	// turned it from DEGRADED to STALLED meanwhile).
	if _, err := svc.QueueResume(pgtest.Context(t), ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	b.do("wait for the queues' note to go", chromedp.Poll[chromedp.Void](`(() => { const n = document.querySelector("[data-live-note]"); return !n.hidden && !n.textContent.includes("paused") && n.textContent.split("The health verdict is now").length === 2; })()`,
		chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
}

// In a browser the corrected-payload editor starts from the shown
// payload, shows the parse error next to the box as it is typed, and
// keeps the form from being sent while the text is not JSON; fixed, the
// payload is previewed and the message retried with it.
func TestBrowserCorrectedPayload(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_fix_js")
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom", Payload: `{"sku": "a-1", "amount": "ten"}`})
	base := "http://" + serve(t, st, serverOpts{allowPayloads: true})
	// Waits for a condition on the page, as long as the test may take.
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(0))
	}
	const box, errorText = "#fix-payload", "document.getElementById('fix-error').textContent"

	b.do("open the editor", chromedp.Navigate(base+pageURLOf("/dlq/message", "queue", q+"_dlq", "id", fmt.Sprint(ids[0]), "payload", "1")), page("message"),
		chromedp.Click(chromedp.CSS("details.editor summary")), chromedp.WaitVisible(chromedp.CSS(box)))
	if v, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS(box))); err != nil || !strings.Contains(v, `"amount": "ten"`) {
		t.Fatalf("the editor starts from %q (%v), not the shown payload", v, err)
	}
	b.do("type a payload that is not JSON", chromedp.Clear(chromedp.CSS(box)), chromedp.SendKeys(chromedp.CSS(box), `{"sku": "a-1", "amount": 10`),
		until(errorText+".startsWith('Not valid JSON')"), until(`document.querySelector('`+box+`').getAttribute('aria-invalid') === 'true'`))
	// A listener added after the editor's sees whether it stopped the
	// submission, and stops it in any case.
	blocked, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`(() => { const f = document.querySelector('form[data-json-editor]'); let blocked = false;
		f.addEventListener('submit', e => { blocked = e.defaultPrevented; e.preventDefault(); }, {once: true}); f.requestSubmit(); return blocked; })()`))
	if err != nil || !blocked {
		t.Fatalf("the form with a payload that is not JSON was not held back (%v)", err)
	}
	// Typing on in a text that is still not JSON says so once it pauses,
	// not at each key: the message is read out by screen readers.
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`(() => { const box = document.querySelector('`+box+`'), out = document.getElementById('fix-error');
		window.announced = 0; out.textContent = '';
		new MutationObserver(ms => { window.announced += ms.length; }).observe(out, {childList: true, characterData: true, subtree: true});
		for (let i = 0; i < 30; i++) { box.value = '{"sku": "a-1", "amount": 1' + '0'.repeat(i) + ','; box.dispatchEvent(new Event('input')); } return true; })()`)); err != nil {
		t.Fatalf("type on, 30 keys at once: %v", err)
	}
	b.do("wait for the message", until(errorText+".startsWith('Not valid JSON')"))
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`window.announced`)); err != nil || n != 1 {
		t.Fatalf("30 keys of a text that is not JSON changed the announced message %d times (%v), want once", n, err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`(() => { document.querySelector('`+box+`').value = '{"sku": "a-1", "amount": 10'; return true; })()`)); err != nil {
		t.Fatalf("take the text back: %v", err)
	}
	b.do("close the object", chromedp.SendKeys(chromedp.CSS(box), "}"), until(errorText+" === ''"))
	if code := b.status("check it", chromedp.Click(chromedp.CSS("form[data-json-editor] button[type=submit]"))); code != http.StatusOK {
		t.Fatalf("checking the corrected payload: status %d", code)
	}
	b.do("see the preview", page("correct"))
	if text := b.text("#fix-preview"); !strings.Contains(text, `"amount": 10`) {
		t.Fatalf("the preview shows %q", text)
	}
	if code := b.status("retry", chromedp.Click(chromedp.CSS("form.confirm button:not(.secondary)"))); code != http.StatusOK {
		t.Fatalf("the retry: status %d", code)
	}
	b.do("see it done", page("done"))
	if text := b.text("h1"); !strings.Contains(text, "retried with a corrected payload") {
		t.Fatalf("after the retry: %q", text)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE message = '{"sku": "a-1", "amount": 10}'::jsonb`); n != 1 {
		t.Fatal("the live message does not carry the corrected payload")
	}
}
