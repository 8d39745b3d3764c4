package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A person who discarded a group by mistake undoes it in the browser:
// from the page after the discard to the discarded messages, one ticked
// and one by its own button, each previewed and restored, and both back
// in the list of dead messages.
func TestBrowserRestoreDiscarded(t *testing.T) {
	t.Parallel()
	b := tab{t: t, ctx: chrome(t)}
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_undo_js")
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	dlq := q + "_dlq"
	base := "http://" + serve(t, st, serverOpts{})

	b.do("discard the group", chromedp.Navigate(base+"/dlq?queue="+q), page("groups"),
		chromedp.Click(chromedp.CSS(`li.group a[href^="/dlq/discard?"]`)), page("bulk"))
	// A second click before the answer came sends nothing more: a listener
	// added after the page's counts what it lets out, and holds it.
	sent, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`(() => { let sent = 0;
		const hold = e => { if (!e.defaultPrevented) sent++; e.preventDefault(); };
		document.addEventListener('submit', hold);
		const button = document.querySelector('form.confirm button'); button.click(); button.click();
		document.removeEventListener('submit', hold);
		document.querySelector('form.confirm').removeAttribute('data-sent');
		return sent; })()`))
	if err != nil || sent != 1 {
		t.Fatalf("two clicks on the confirm sent %d forms (%v), want 1", sent, err)
	}
	if code := b.status("confirm the discard", chromedp.Click(chromedp.CSS("form.confirm button"))); code != http.StatusOK {
		t.Fatalf("the discard: status %d", code)
	}
	if text := b.text("h1"); text != "Discarded 3 messages" || deadCount(t, svc, ops.DeadFilter{Queue: q}) != 0 {
		t.Fatalf("after the discard: %q, %d messages left dead", text, deadCount(t, svc, ops.DeadFilter{Queue: q}))
	}

	const undo = `ul.next a[href^="/dlq/discarded?"]`
	if n := b.count(undo); n != 1 {
		t.Fatalf("the page after the discard offers %d links to undo it, want 1", n)
	}
	b.do("follow the undo", chromedp.Click(chromedp.CSS(undo)), page("discarded"))
	if n := b.count(`tbody input[name="id"]`); n != 3 {
		t.Fatalf("the discarded messages offer %d to tick, want 3", n)
	}
	ticked := b.value(`tbody tr:first-child input[name="id"]`)
	b.do("tick one and restore it", chromedp.Click(chromedp.CSS(`tbody tr:first-child input[name="id"]`)),
		chromedp.Click(chromedp.CSS(`p.actions button[type="submit"]`)), page("restore"))
	if text := b.text(".lead"); !strings.Contains(text, "1 of 1 selected message would go back into "+dlq) {
		t.Fatalf("the preview says %q", text)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("the preview restored %d messages", n)
	}
	if code := b.status("confirm the restore", chromedp.Click(chromedp.CSS("form.confirm button"))); code != http.StatusOK {
		t.Fatalf("the restore: status %d", code)
	}
	b.do("see it done", page("done"))
	if text := b.text("main"); !strings.Contains(text, "Restored 1 message") || !strings.Contains(text, "Message "+ticked+" is back in "+dlq) {
		t.Fatalf("after the restore: %q", text)
	}

	// Another by its own button.
	b.do("back to the discarded messages", chromedp.Click(chromedp.CSS(undo)), page("discarded"))
	other := b.value(`tbody tr:first-child input[name="id"]`)
	b.do("restore one by its button", chromedp.Click(chromedp.CSS(`tbody tr:first-child a[href^="/dlq/restore?"]`)), page("restore"),
		chromedp.Click(chromedp.CSS("form.confirm button")), page("done"))
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 2 {
		t.Fatalf("%d messages dead after two restores, want 2", n)
	}

	b.do("see them in the dead messages", chromedp.Click(chromedp.CSS(`ul.next a[href^="/dlq/messages?"]`)), page("list"))
	if rows := b.text("tbody"); b.count("tbody tr") != 2 || !strings.Contains(rows, ticked) || !strings.Contains(rows, other) {
		t.Fatalf("the dead messages after the restores list %d rows, want messages %s and %s:\n%s", b.count("tbody tr"), ticked, other, rows)
	}
	b.do("see the audit entry", chromedp.Navigate(base+"/audit?client=dashboard"), page("audit"))
	if text := b.text("tbody tr:first-child"); !strings.Contains(text, ops.OpDLQRestore) {
		t.Fatalf("the newest audit entry of the dashboard: %q", text)
	}
}

// value is the value attribute of the first element sel selects.
func (b tab) value(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(sel), "value"))
	if err != nil || !v.Exists {
		b.t.Fatalf("read the value of %s: %v", sel, err)
	}
	return fmt.Sprint(v.Value)
}
