package dashboard_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The dashboard counts the ages of what the database wrote on the
// database server's clock: on a server three hours behind this host, a
// message that died a moment ago reads as just dead, on its page and on
// the list of its DLQ, not as three hours old.
func TestAgesOnTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	q := pgtest.NewQueue(t, st, "skewed")
	ids := pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "charge", Class: "Timeout", Message: "upstream timed out"})
	token := newToken(t)
	b := newBrowser(t, serve(t, st, serverOpts{token: token}))
	b.login(token)
	for _, path := range []string{"/dlq/messages?queue=" + q + "_dlq", "/dlq/message?queue=" + q + "_dlq&id=" + strconv.FormatInt(ids[0], 10), "/dlq?queue=" + q} {
		code, page, _ := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", path, code, page)
		}
		// Seconds or minutes ago, however slow the machine: not hours.
		if strings.Contains(page, " h ago") || !strings.Contains(page, "just now") && !strings.Contains(page, "s ago") && !strings.Contains(page, " min ago") {
			t.Errorf("%s counts the age of a message that died a moment ago on this host's clock, three hours ahead of the server's:\n%s", path, page)
		}
	}
}
