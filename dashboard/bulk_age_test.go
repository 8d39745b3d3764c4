package dashboard_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A retry's or discard's preview filtered by an age carries the instant it
// stood for in its confirming form: the form is sent minutes later, by
// when "since 20m" selects another window, and the change was refused as
// if the dead messages had changed.
func TestBulkPreviewFormPinsAnAge(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_age")
	pgtest.DeadLetter(t, st, q, pgtest.DeadSpec{Kind: "k"})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	since := regexp.MustCompile(`<input type="hidden" name="since" value="([^"]*)">`)
	for _, verb := range []string{"retry", "discard"} {
		code, page, _ := b.get("/dlq/" + verb + "?queue=" + q + "&since=20m")
		m := since.FindStringSubmatch(page)
		if code != http.StatusOK || m == nil {
			t.Fatalf("%s preview: %d, no since in its form:\n%s", verb, code, page)
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil || time.Since(at) < 19*time.Minute || time.Since(at) > time.Hour {
			t.Errorf("%s preview's form carries since %q; want the instant 20 minutes ago", verb, m[1])
		}
	}
}
