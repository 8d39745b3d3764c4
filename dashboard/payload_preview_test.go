package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A payload too large for the page shows every top-level field, the long
// value shortened and marked, indented as any payload, and says so.
func TestLargePayloadShowsItsSmallFields(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_preview")
	big := `{"blob": "` + strings.Repeat("x", 20<<10) + `", "order_id": 42, "tenant": "acme"}`
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: big})
	b := newBrowser(t, serve(t, st, serverOpts{allowPayloads: true}))
	code, page, _ := b.get(pageURLOf("/dlq/message", "queue", q+"_dlq", "id", fmt.Sprint(ids[0]), "payload", "1"))
	for _, want := range []string{`  "order_id": 42,`, `  "tenant": "acme"`, ops.ShortenedMark + "a string of 20480 bytes]", "its long values are shortened"} {
		if code != http.StatusOK || !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("the page of a 20 KB payload: %d, without %q", code, want)
		}
	}
}
