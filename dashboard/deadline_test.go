package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The page of a message whose deadline has passed says so, and its
// retry's preview offers to clear it; a retry without it leaves the
// message, saying why, and one with it moves the message back without its
// deadline.
func TestRetryPastTheDeadlineFromItsPage(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_dl")
	ids := pgtest.DeadLetter(t, st, q,
		pgtest.DeadSpec{Kind: "k", Reason: store.ReasonDeadlineExceeded, Headers: `{"pgbus_kind": "k", "pgbus_deadline": "2020-01-01T00:00:00Z"}`},
		pgtest.DeadSpec{Kind: "k", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	msg := func(id int64) string { return fmt.Sprintf("/dlq/message?queue=%s_dlq&id=%d", q, id) }

	const passed = "a retry leaves it here unless it clears the deadline, which the retry"
	if _, page, _ := b.get(msg(ids[1])); strings.Contains(page, passed) {
		t.Fatalf("the page of a message without a deadline offers to clear one:\n%s", page)
	}
	_, page, _ := b.get(msg(ids[0]))
	if !strings.Contains(page, passed) || !strings.Contains(page, `datetime="2020-01-01T00:00:00Z"`) {
		t.Fatalf("the page of a message past its deadline does not say its retry's preview offers to clear it:\n%s", page)
	}
	if _, preview, _ := b.get(fmt.Sprintf("/dlq/selected?verb=retry&queue=%s_dlq&id=%d", q, ids[0])); !strings.Contains(preview, `<input type="checkbox" name="clear_deadline" value="1" required>`) {
		t.Fatalf("the retry's preview of a message past its deadline does not offer to clear it:\n%s", preview)
	}
	form := url.Values{"csrf": {csrf(t, page)}, "queue": {q + "_dlq"}, "id": {fmt.Sprint(ids[0])}}
	if code, page, _ := b.post("/dlq/message/retry", form, nil); code != http.StatusOK || !strings.Contains(page, "was not retried") || !strings.Contains(page, "deadline") {
		t.Fatalf("retry without clearing the deadline: %d\n%s", code, page)
	}
	form.Set("clear_deadline", "1")
	if code, page, _ := b.post("/dlq/message/retry", form, nil); code != http.StatusOK || !strings.Contains(page, "Moved back to "+q) {
		t.Fatalf("retry clearing the deadline: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d messages dead, want the one without a deadline", n)
	}
	var headers string
	if err := st.Pool().QueryRow(pgtest.Context(t), `SELECT headers::text FROM pgmq."q_`+q+`"`).Scan(&headers); err != nil || strings.Contains(headers, "pgbus_deadline") {
		t.Fatalf("the retried message's headers %s (%v); want them without the deadline", headers, err)
	}
}

// A group retry whose messages include one past its deadline: the preview
// counts every message, says which passed their deadline and asks to
// clear them; confirmed with it, every message moves. Without it, the
// guarded retry moves nothing and says why.
func TestGroupRetryWithADeadlinePassed(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_gdl")
	pgtest.DeadLetter(t, st, q,
		pgtest.DeadSpec{Kind: "k", Headers: `{"pgbus_kind": "k", "pgbus_deadline": "2020-01-01T00:00:00Z"}`},
		pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/retry?queue=" + q)
	if code != http.StatusOK || !strings.Contains(page, "Retry these 3 messages") || !strings.Contains(page, `name="clear_deadline"`) || !strings.Contains(page, "1 of these messages has passed its deadline") {
		t.Fatalf("preview: %d\n%s", code, page)
	}
	m := regexp.MustCompile(`name="expect" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the preview has no expect:\n%s", page)
	}
	expect := m[1]
	form := url.Values{"csrf": {csrf(t, page)}, "queue": {q}, "expect": {expect}}
	if code, page, _ := b.post("/dlq/retry", form, nil); code == http.StatusOK || !strings.Contains(page, "deadline") {
		t.Fatalf("confirmed without clearing the deadline: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 3 {
		t.Fatalf("%d dead after a refused retry, want 3", n)
	}
	form.Set("clear_deadline", "1")
	if code, page, _ := b.post("/dlq/retry", form, nil); code != http.StatusOK || !strings.Contains(page, "Retried 3 messages") {
		t.Fatalf("confirmed clearing the deadline: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("%d dead after the retry, want 0", n)
	}
}

// A retry of ticked messages, one of which passed its deadline, says so
// in its preview and offers to clear the deadline: without it, the others
// move and that one stays, saying why; selected again alone, it can only
// be confirmed with the deadline cleared, and then moves.
func TestSelectedRetryWithADeadlinePassed(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_sdl")
	ids := pgtest.DeadLetter(t, st, q,
		pgtest.DeadSpec{Kind: "k", Headers: `{"pgbus_kind": "k", "pgbus_deadline": "2020-01-01T00:00:00Z"}`},
		pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	selection := func(ids ...int64) url.Values {
		v := url.Values{"verb": {"retry"}, "queue": {q + "_dlq"}}
		for _, id := range ids {
			v.Add("id", fmt.Sprint(id))
		}
		return v
	}
	code, page, _ := b.get("/dlq/selected?" + selection(ids...).Encode())
	if code != http.StatusOK || !strings.Contains(page, "1 of these messages has passed its deadline") ||
		!strings.Contains(page, `<input type="checkbox" name="clear_deadline" value="1">`) {
		t.Fatalf("preview of 3, one past its deadline: %d\n%s", code, page)
	}
	// A preview link that asks to clear the deadlines still shows what the
	// retry would leave, and asks in its form.
	crafted := selection(ids...)
	crafted.Set("clear_deadline", "1")
	if code, page, _ := b.get("/dlq/selected?" + crafted.Encode()); code != http.StatusOK || !strings.Contains(page, "1 of these messages has passed its deadline") {
		t.Fatalf("preview asked to clear the deadlines: %d\n%s", code, page)
	}
	form := selection(ids...)
	form.Set("csrf", csrf(t, page))
	if code, page, _ = b.post("/dlq/selected", form, nil); code != http.StatusOK || !strings.Contains(page, "Retried 2 messages") || !strings.Contains(page, "deadline") {
		t.Fatalf("confirmed without clearing: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 1 {
		t.Fatalf("%d dead, want the 1 past its deadline", n)
	}
	code, page, _ = b.get("/dlq/selected?" + selection(ids[0]).Encode())
	if code != http.StatusOK || !strings.Contains(page, `<input type="checkbox" name="clear_deadline" value="1" required>`) {
		t.Fatalf("preview of the one past its deadline: %d\n%s", code, page)
	}
	form = selection(ids[0])
	form.Set("csrf", csrf(t, page))
	form.Set("clear_deadline", "1")
	if code, page, _ = b.post("/dlq/selected", form, nil); code != http.StatusOK || !strings.Contains(page, "Retried 1 message") {
		t.Fatalf("confirmed clearing the deadline: %d\n%s", code, page)
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 0 {
		t.Fatalf("%d dead after the retry, want 0", n)
	}
}
