package cli_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus send --deadline 1h on a host whose clock is off from the
// database server's (set back three hours here) writes a deadline an hour
// after the server's now, on which workers judge it, not an hour after
// the host's.
func TestSendDeadlineFromNowIsOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	url := st.Pool().Config().ConnString()
	d := db{url: url, env: []string{"DATABASE_URL=" + url}, conns: queryPool(t, url)}
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", "{}", "--deadline", "1h")
	var us int64
	d.query(t, `SELECT (extract(epoch FROM (headers->>'pgbus_deadline')::timestamptz - now()) * 1e6)::bigint FROM pgmq.q_orders`, &us)
	if left := time.Duration(us) * time.Microsecond; left < 50*time.Minute || left > time.Hour {
		t.Errorf("the deadline is %s after the server's now; want an hour", left)
	}
}

// The ages the tables show count on the database server's clock: on a
// server three hours behind this host, a message that died a moment ago
// is not three hours old in dlq list, dlq summary or dlq show.
func TestAgesOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	url := st.Pool().Config().ConnString()
	d := db{url: url, env: []string{"DATABASE_URL=" + url}, conns: queryPool(t, url)}
	d.ok(t, "queue", "create", "orders")
	ids := pgtest.DeadLetter(t, st, "orders", pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	for _, args := range [][]string{{"dlq", "list", "--queue", "orders"}, {"dlq", "summary"}, {"dlq", "show", strconv.FormatInt(ids[0], 10), "--queue", "orders"}} {
		out := d.ok(t, args...)
		// Seconds or minutes ago, however slow the machine: not hours.
		if strings.Contains(out, "h ago") || !strings.Contains(out, " ago") && !strings.Contains(out, "just now") {
			t.Errorf("pgbus %s counts the age of a message that died a moment ago on this host's clock, three hours ahead of the server's:\n%s", strings.Join(args, " "), out)
		}
	}
}
