package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A dead-letter block another client wrote without its source_msg_id and
// max_retries shows them as unknown in pgbus dlq list and dlq show, and
// leaves them out of their --json, never as a made-up 0.
func TestDLQShowsNumbersABlockLacksAsUnknown(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	id := pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Kind: "k"})[0]
	pgtest.Exec(t, d.url, fmt.Sprintf(`UPDATE pgmq.q_orders_dlq SET headers = headers #- '{pgbus_dead_letter,source_msg_id}' #- '{pgbus_dead_letter,max_retries}' WHERE msg_id = %d`, id))

	list := d.ok(t, "dlq", "list", "--queue", "orders")
	if line := lineOf(list, fmt.Sprint(id)+" "); !strings.Contains(line, "/unknown") || strings.Contains(line, "/0") {
		t.Errorf("dlq list: %q; want its attempts out of an unknown max_retries\n%s", line, list)
	}
	show := d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "orders")
	for _, want := range []string{"queue orders, message unknown,", "(max_retries unknown)"} {
		if !strings.Contains(show, want) {
			t.Errorf("dlq show:\n%s\nwant %q", show, want)
		}
	}
	if strings.Contains(show, "message 0") || strings.Contains(show, "max_retries 0") {
		t.Errorf("dlq show:\n%s\nshows a made-up 0", show)
	}
	listJSON := d.ok(t, "dlq", "list", "--queue", "orders", "--json")
	showJSON := d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "orders", "--json")
	for what, out := range map[string]string{"dlq list --json": listJSON, "dlq show --json": showJSON} {
		if strings.Contains(out, `"source_msg_id"`) || strings.Contains(out, `"max_retries"`) {
			t.Errorf("%s: %s; want source_msg_id and max_retries left out", what, out)
		}
	}
}
