package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A group retry confirmed with a pace makes the messages visible one
// after another at that rate and says when the last one is; a pace that
// is no number, or out of range, moves nothing and says what to give.
func TestGroupRetryAtARate(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_rate")
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "k"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/retry?queue=" + q)
	if code != http.StatusOK || !strings.Contains(page, `name="rate"`) {
		t.Fatalf("the retry's preview offers no pace: %d\n%s", code, page)
	}
	m := regexp.MustCompile(`name="expect" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the preview has no expect:\n%s", page)
	}
	form := url.Values{"csrf": {csrf(t, page)}, "queue": {q}, "expect": {m[1]}}
	for rate, want := range map[string]string{"fast": "is not a number", "0": "rate 0 is out of range", "0.0": "rate 0 is out of range", "0.001": "one a minute", "1e6": "one a minute"} {
		form.Set("rate", rate)
		if code, page, _ := b.post("/dlq/retry", form, nil); code != http.StatusBadRequest || !strings.Contains(page, want) {
			t.Errorf("pace %q: %d, want 400 saying %q:\n%s", rate, code, want, page)
		}
	}
	if n := deadCount(t, svc, ops.DeadFilter{Queue: q}); n != 3 {
		t.Fatalf("%d dead after refused retries, want 3", n)
	}
	form.Set("rate", "0.5")
	if code, page, _ := b.post("/dlq/retry", form, nil); code != http.StatusOK || !strings.Contains(page, "Retried 3 messages") || !strings.Contains(page, `id="paced"`) {
		t.Fatalf("retry at 0.5 a second: %d\n%s", code, page)
	}
	var spread float64
	if err := st.Pool().QueryRow(pgtest.Context(t), `SELECT extract(epoch FROM max(vt) - min(vt)) FROM pgmq."q_`+q+`"`).Scan(&spread); err != nil || time.Duration(spread*float64(time.Second)) != 4*time.Second {
		t.Fatalf("the retried messages are visible over %vs (%v); want 4s, one every 2s", spread, err)
	}
}
