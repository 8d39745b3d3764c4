package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestListPagesShowEveryRow: the workers, circuits and dead-letter pages
// are lists a person scrolls, so they list every process, every breaker's
// users and every dead-letter group, where the same operations for an
// agent leave rows out to stay small.
func TestListPagesShowEveryRow(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	queues := make([]string, 20)
	for i := range queues {
		queues[i] = fmt.Sprintf("lists_queue_with_a_long_name_%02d", i)
	}
	const processes, breakers, users = 80, 40, 30
	for i := range processes {
		if err := st.RegisterWorker(ctx, store.WorkerProcess{ID: fmt.Sprintf("lists-%03d", i), Hostname: fmt.Sprintf("host-%03d", i), PID: i + 1, Queues: queues, Concurrency: 10}); err != nil {
			t.Fatal(err)
		}
	}
	used := make([]store.BreakerUser, users)
	for i := range used {
		used[i] = store.BreakerUser{Queue: fmt.Sprintf("user_queue_%02d", i), Kind: "charge"}
	}
	for i := range breakers {
		name := fmt.Sprintf("http:bank-%03d.example.com", i)
		if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 5, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordBreakerUsers(ctx, name, used); err != nil {
			t.Fatal(err)
		}
	}
	const groups = 80
	pgtest.CreateQueue(t, st, "lists_dead")
	// Five kinds by 16 classes: 80 groups of one.
	if err := st.BulkLoadDead(ctx, "lists_dead", groups, groups/5); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, st)
	if sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{}); err != nil || !sum.Truncated || len(sum.Groups) >= groups {
		t.Fatalf("for an agent: %d of %d groups, %v; the fixture should pass the response bound", len(sum.Groups), sum.TotalGroups, err)
	}
	if ws, err := svc.Workers(ctx, ops.WorkersRequest{}); err != nil || ws.Omitted == 0 {
		t.Fatalf("for an agent: %d workers listed, %d omitted, %v; the fixture should pass the response bound", len(ws.Workers), ws.Omitted, err)
	}
	if cs, err := svc.Circuits(ctx, ops.CircuitsRequest{}); err != nil || len(cs.Circuits) == 0 || cs.Circuits[0].UsersOmitted == 0 {
		t.Fatalf("for an agent: %+v, %v; a breaker's users should be cut", cs, err)
	}

	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	code, page, _ := b.get("/workers")
	if code != http.StatusOK {
		t.Fatalf("GET /workers: %d\n%s", code, page)
	}
	for i := range processes {
		if !strings.Contains(page, fmt.Sprintf(">host-%03d <", i)) {
			t.Fatalf("the workers page lacks process host-%03d of %d", i, processes)
		}
	}
	code, page, _ = b.get("/circuits")
	if code != http.StatusOK {
		t.Fatalf("GET /circuits: %d\n%s", code, page)
	}
	if n := strings.Count(page, fmt.Sprintf("user_queue_%02d/charge", users-1)); n != breakers {
		t.Fatalf("the circuits page shows the last of %d users on %d breakers, want all %d", users, n, breakers)
	}
	// A health reason's link names one breaker.
	code, page, _ = b.get("/circuits?name=http:bank-007.example.com")
	if code != http.StatusOK || strings.Count(page, "http:bank-") != strings.Count(page, "http:bank-007.example.com") || !strings.Contains(page, "http:bank-007.example.com") {
		t.Fatalf("GET /circuits?name=http:bank-007.example.com: %d, want that breaker only\n%s", code, page)
	}
	// A name no breaker has, an injection, a huge one, a NUL: a clear
	// page, and every breaker still there.
	for _, name := range []string{"http:nowhere", "x' OR '1'='1", strings.Repeat("n", 10_000), "a%00b"} {
		code, page, _ = b.get("/circuits?name=" + strings.ReplaceAll(url.QueryEscape(name), "%2500", "%00"))
		if code != http.StatusNotFound && code != http.StatusBadRequest || !strings.Contains(page, "Back to the overview") {
			t.Errorf("GET /circuits?name=%.40q: %d; want 404 or 400 with a way back\n%.2000s", name, code, page)
		}
	}
	if cs, err := svc.Circuits(ctx, ops.CircuitsRequest{All: true}); err != nil || len(cs.Circuits) != breakers {
		t.Fatalf("after the bad names: %d breakers, %v; want %d", len(cs.Circuits), err, breakers)
	}
	code, page, _ = b.get("/dlq")
	if code != http.StatusOK {
		t.Fatalf("GET /dlq: %d\n%s", code, page)
	}
	if n := strings.Count(page, `<li class="group">`); n != groups || strings.Contains(page, "largest of") {
		t.Fatalf("the dead letters page lists %d groups, want all %d, with no note of groups left out", n, groups)
	}
}

// The filter form of the dead-letter pages sends back every part of the
// filter the page was opened with, until too (an audit entry's link, or a
// URL typed by hand, may hold one): submitted as it stands, it selects
// what the page showed, not every message after that time.
func TestFilterFormKeepsUntil(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_until")
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	inputRE := regexp.MustCompile(`<input [^>]*name="([^"]+)" value="([^"]*)"`)
	for _, p := range []string{"/dlq", "/dlq/messages"} {
		code, page, _ := b.get(p + "?queue=" + q + "&until=2020-01-01")
		if code != http.StatusOK || !strings.Contains(page, "No dead message matches these filters") {
			t.Fatalf("%s until 2020: %d\n%s", p, code, page)
		}
		start := strings.Index(page, `aria-label="Filter dead letters"`)
		end := strings.Index(page[start:], "</form>")
		if start < 0 || end < 0 {
			t.Fatalf("%s has no filter form:\n%s", p, page)
		}
		form := url.Values{}
		for _, m := range inputRE.FindAllStringSubmatch(page[start:start+end], -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		code, page, _ = b.get(p + "?" + form.Encode())
		if code != http.StatusOK || !strings.Contains(page, "No dead message matches these filters") {
			t.Errorf("%s: its filter form, sent as it stands (%s), selects more than the page it is on: %d\n%s", p, form.Encode(), code, page)
		}
	}
}
