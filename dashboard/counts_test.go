package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The overview filtered by name down to one of two queues counts that one
// in the singular.
func TestOverviewNameFilterOfOneQueue(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	one := pgtest.NewQueue(t, st, "alpha")
	pgtest.NewQueue(t, st, "beta")
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/?name=" + url.QueryEscape(one))
	if code != http.StatusOK {
		t.Fatalf("GET /?name=%s: %d\n%s", one, code, page)
	}
	if want := "1 of the 2 queues has a name that contains “" + one + "”"; !strings.Contains(html.UnescapeString(page), want) {
		t.Fatalf("the overview filtered to one queue does not say %q:\n%s", want, page)
	}
}
