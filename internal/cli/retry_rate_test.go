package cli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dlq retry-all --rate makes the messages visible one after another
// and says when the last one is, --json as the MCP tool does; a rate out
// of range is a usage error that moves nothing.
func TestRetryAtARateFromTheCLI(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	st := pgtest.OpenStore(t, d.url)
	ids := pgtest.DeadLetterN(t, st, "orders", 3, pgtest.DeadSpec{Kind: "charge"})
	// 0 too: read as no rate it would move them all at once.
	for _, rate := range []string{"0.001", "NaN", "-1", "20000", "0", "0.0"} {
		if r := pgbus(t, d.env, "dlq", "retry-all", "--queue", "orders", "--rate", rate, "--yes"); r.code != 2 || !strings.Contains(r.stderr, "one a minute") {
			t.Errorf("retry-all --rate %s: exit %d, stderr %q; want 2, saying the range", rate, r.code, r.stderr)
		}
		if r := pgbus(t, d.env, "dlq", "retry", strconv.FormatInt(ids[0], 10), "--rate", rate); r.code != 2 || !strings.Contains(r.stderr, "one a minute") {
			t.Errorf("retry --rate %s: exit %d, stderr %q; want 2, saying the range", rate, r.code, r.stderr)
		}
	}
	out := d.ok(t, "dlq", "retry-all", "--queue", "orders", "--limit", "2", "--rate", "0.5", "--yes")
	if !strings.Contains(out, "retried 2 dead messages") || !strings.Contains(out, "paced: the last message becomes visible at ") {
		t.Fatalf("retry-all --rate 0.5:\n%s\nwant 2 retried and when the last is visible", out)
	}
	var spread time.Duration
	var n int
	var secs float64
	d.query(t, `SELECT count(*), extract(epoch FROM max(vt) - min(vt)) FROM pgmq.q_orders`, &n, &secs)
	if spread = time.Duration(secs * float64(time.Second)); n != 2 || spread != 2*time.Second {
		t.Fatalf("%d messages back, %s between the first and the last; want 2, 2s apart", n, spread)
	}

	if out := d.ok(t, "dlq", "retry-all", "--queue", "orders", "--rate", "0.5", "--dry-run"); !strings.Contains(out, "paced: the last message would become visible at ") {
		t.Fatalf("retry-all --rate --dry-run:\n%s\nwant when the last would be visible", out)
	}
	var res struct {
		Retried      int        `json:"retried"`
		VisibleUntil *time.Time `json:"visible_until"`
	}
	if err := json.Unmarshal([]byte(d.ok(t, "dlq", "retry-all", "--queue", "orders", "--rate", "1", "--yes", "--json")), &res); err != nil || res.Retried != 1 || res.VisibleUntil == nil {
		t.Fatalf("retry-all --rate --json = %+v, %v; want 1 retried and visible_until", res, err)
	}
}
