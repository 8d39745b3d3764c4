package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A cursor the dead-letter pages refuse, whose error names it as the
// field at fault, is no filter of theirs: the error offers the page with
// its filters cleared, as for a request it could not read, and no page
// "without its cursor filter".
func TestRefusedCursorIsNoFilter(t *testing.T) {
	t.Parallel()
	q, b := browseQueue(t, pgtest.Store(t), "dash_cursor")
	for _, path := range []string{"/dlq", "/dlq/messages"} {
		code, page, _ := b.get(path + "?queue=" + q + "&cursor=garbage")
		if code != http.StatusBadRequest || !strings.Contains(page, "cursor is not valid here") || strings.Contains(page, "cursor filter") ||
			!strings.Contains(page, "Show this page with its filters cleared") {
			t.Errorf("GET %s with a cursor not issued: %d; want 400 saying the cursor is not valid, with the filters cleared and no cursor filter\n%s", path, code, page)
		}
	}
}
