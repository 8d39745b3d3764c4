package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A database restored in two loads (the schema, then the data, its rows
// counted by the triggers on top of the counts restored) counts each dead
// message twice; pgbus migrate rebuilds such counts, says which, and the
// depth it shows after is the DLQ's rows.
func TestMigrateRecountsDoubledDLQCounts(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	pgtest.DeadLetterN(t, s, "orders", 3, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	pgtest.Exec(t, d.url, `INSERT INTO pgbus.dlq_group_deltas (dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta)
		SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, count FROM pgbus.dlq_groups WHERE dlq = 'orders_dlq'
		UNION ALL
		SELECT dlq, row_key, group_key, source_queue, kind, error_class, error_norm, reason, delta FROM pgbus.dlq_group_deltas WHERE dlq = 'orders_dlq'`)
	if out := d.ok(t, "dlq", "summary"); !strings.Contains(out, "6 dead messages") {
		t.Fatalf("the summary of doubled counts:\n%s\nwant 6 dead messages", out)
	}
	if out := d.ok(t, "migrate"); !strings.Contains(out, "recounted the dead-letter groups of orders_dlq: they counted 6 messages, its table holds 3 messages\n") {
		t.Fatalf("migrate over doubled counts:\n%s\nwant it to say it recounted orders_dlq", out)
	}
	if out := d.ok(t, "dlq", "summary"); !strings.Contains(out, "3 dead messages in 1 group") {
		t.Fatalf("the summary after migrate:\n%s\nwant 3 dead messages", out)
	}
	var st struct {
		Recounted []struct {
			DLQ           string `json:"dlq"`
			Counted, Rows int64
		} `json:"dlqs_recounted"`
	}
	if err := json.Unmarshal([]byte(d.ok(t, "migrate", "--json")), &st); err != nil || st.Recounted == nil || len(st.Recounted) != 0 {
		t.Fatalf("migrate --json once the counts add up: %+v, %v; want an empty dlqs_recounted", st, err)
	}
}
