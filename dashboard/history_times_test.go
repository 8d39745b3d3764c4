package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A folded run of identical failures on a message's page shows when the
// first and the last happened, not the last alone.
func TestMessagePageFoldedFailuresSpanTheirTimes(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_spans")
	id := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Class: "Upstream", Message: "failed"})[0]
	if _, err := st.Pool().Exec(pgtest.Context(t), `WITH f AS (SELECT * FROM pgbus.failures ORDER BY id LIMIT 1),
		ins AS (INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message, failed_at)
			SELECT queue_name, msg_id, 2, kind, error_class, error_message, timestamptz '2026-01-01 10:05:30Z' FROM f)
		UPDATE pgbus.failures p SET attempt = 1, failed_at = '2026-01-01 10:00:00Z' FROM f WHERE p.id = f.id`); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, id))
	row := pieceWith(page, "<li>", "times alike")
	if code != http.StatusOK || !strings.Contains(row, `datetime="2026-01-01T10:00:00Z"`) || !strings.Contains(row, `datetime="2026-01-01T10:05:30Z"`) {
		t.Fatalf("GET the message: %d; its folded failure row:\n%s\nwant the times of the first and the last failure", code, row)
	}
}
