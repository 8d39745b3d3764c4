package bench

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Every dashboard page the DLQ benchmark times is served with status 200
// and its content on a small load, and a page that fails, lacks its
// content or does not know the session is an error, never a timing.
func TestDashboardPagesServeTheirContent(t *testing.T) {
	// A database of its own: the overview page lists the 50 queues with
	// the most dead messages, and other packages' queues in a shared one
	// may have more than this test's.
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	queues := make([]string, 2)
	for i := range queues {
		q, err := freshQueue(ctx, st, "dlqpages")
		if err != nil {
			t.Fatal(err)
		}
		queues[i] = q
		t.Cleanup(func() { _ = st.DropQueue(ctx, q) })
		if err := st.BulkLoadDead(ctx, q, 60, 4); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := dashboardPages(ctx, st, queues, 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 5 {
		t.Fatalf("%d pages, want 5: overview, groups, a group's messages, a queue's messages, a message", len(pages))
	}
	for _, p := range pages {
		for range 3 { // the message page picks a message at random
			if err := p.fn(ctx); err != nil {
				t.Errorf("%s: %v", p.name, err)
			}
		}
	}

	c, err := newPageClient(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	dlq := store.DLQName(queues[0])
	for target, want := range map[string]string{
		"/dlq/message?queue=" + dlq + "&id=1000": "status 404",
		"/no/such/page":                          "status 404",
		"/dlq?queue=" + dlq:                      `does not hold "no such text"`,
	} {
		if _, err := c.get(ctx, target, "no such text"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", target, err, want)
		}
	}
	c.session = []*http.Cookie{{Name: c.session[0].Name, Value: "forged.session"}}
	if _, err := c.get(ctx, "/"); err == nil || !strings.Contains(err.Error(), "new session") {
		t.Errorf("a page served to a forged session: %v, want the new session reported", err)
	}
}

// The overview page is timed on a database where 50 other queues hold
// more dead messages than the benchmark's: the page lists those 50 and
// not the benchmark's queue, and that is no failure of the page.
func TestOverviewPageTimedAmongBusierQueues(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	for range 50 {
		q, err := freshQueue(ctx, st, "busier")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.BulkLoadDead(ctx, q, 5, 1); err != nil {
			t.Fatal(err)
		}
	}
	q, err := freshQueue(ctx, st, "dlqpages")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.BulkLoadDead(ctx, q, 2, 1); err != nil {
		t.Fatal(err)
	}
	pages, err := dashboardPages(ctx, st, []string{q}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pages[0].name != "dashboard overview page" {
		t.Fatalf("first page %q, want the overview", pages[0].name)
	}
	if err := pages[0].fn(ctx); err != nil {
		t.Fatalf("overview page among 50 busier queues: %v", err)
	}
	c, err := newPageClient(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, `<th scope="row">`+q) {
		t.Fatalf("the overview lists %s: the test no longer has it crowded out", q)
	}
}
