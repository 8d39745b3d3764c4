package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue too large to count at each read shows its ready count marked as
// an estimate, on the overview (and in its backlog) and on its page; a
// queue counted exactly beside it is not marked.
func TestEstimatedCountsAreMarked(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	big, small := pgtest.NewQueue(t, st, "big"), pgtest.NewQueue(t, st, "small")
	for q, n := range map[string]int{big: 12, small: 3} {
		batch := make([]store.NewMessage, n)
		for i := range batch {
			batch[i] = store.NewMessage{Payload: json.RawMessage(`{}`)}
		}
		if _, err := st.SendBatch(ctx, q, batch); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.SettleRowStats(t, st, "pgmq.q_"+big, "pgmq.q_"+small)
	st.SetExactCountLimit(10)
	b := newBrowser(t, serve(t, st, serverOpts{}))

	code, page, _ := b.get("/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	row := func(q string) string {
		m := regexp.MustCompile(`(?s)<tr data-queue="` + q + `".*?</tr>`).FindString(page)
		if m == "" {
			t.Fatalf("the overview has no row of %s:\n%s", q, page)
		}
		return m
	}
	if !regexp.MustCompile(`<td class="n est" data-count="visible" title="An estimate from the database&#39;s statistics[^"]*">12</td>`).MatchString(row(big)) {
		t.Errorf("the row of %s does not mark its 12 ready as an estimate:\n%s", big, row(big))
	}
	if !regexp.MustCompile(`<td class="n" data-count="visible">3</td>`).MatchString(row(small)) {
		t.Errorf("the row of %s is not its exact 3 ready:\n%s", small, row(small))
	}
	if !regexp.MustCompile(`<span data-live="backlog" class="est" title="An estimate from the database&#39;s statistics[^"]*">15</span> ready`).MatchString(page) {
		t.Errorf("the overview's backlog is not marked as an estimate:\n%s", page)
	}

	code, page, _ = b.get("/queues/" + big)
	if code != http.StatusOK || !regexp.MustCompile(`<dd data-count="visible" class="est" title="An estimate from the database&#39;s statistics[^"]*">12`).MatchString(page) {
		t.Errorf("GET /queues/%s: %d; its ready count is not marked as an estimate:\n%s", big, code, page)
	}
	code, page, _ = b.get("/queues/" + small)
	if code != http.StatusOK || !regexp.MustCompile(`<dd data-count="visible">3`).MatchString(page) {
		t.Errorf("GET /queues/%s: %d; want its exact ready count:\n%s", small, code, page)
	}
}
