package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// pgbus queue messages prints the notes of its result under the table,
// as pgbus dlq show does, but none about payloads, which the table does
// not show; --json keeps every note.
func TestQueueMessagesPrintsNotes(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"n": 1}`, "--header", "api_key=k-live-777")

	const note = "note: 1 secret-looking value is shown as " + ops.Redacted
	for _, args := range [][]string{{"queue", "messages", "orders"}, {"queue", "messages", "orders", "--no-payload"}} {
		out := d.ok(t, args...)
		if !strings.Contains(out, note) {
			t.Errorf("pgbus %s does not say %q:\n%s", strings.Join(args, " "), note, out)
		}
		if strings.Contains(out, "payload") || strings.Contains(out, "k-live-777") {
			t.Errorf("pgbus %s notes payloads, which its table does not show, or the secret:\n%s", strings.Join(args, " "), out)
		}
	}
	var page ops.LiveMessages
	d.json(t, &page, "queue", "messages", "orders", "--no-payload")
	if len(page.Notes) == 0 || !strings.HasPrefix(page.Notes[0], "payload hidden") || !strings.Contains(page.Notes[0], "--no-payload") {
		t.Errorf("pgbus queue messages --json --no-payload notes %q; want the payload hidden and the flag that shows it", page.Notes)
	}
}
