package dashboard_test

import (
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The dashboard compresses its pages and /live for a browser that accepts
// gzip when it says the request comes from a page of the dashboard or from
// the person (Sec-Fetch-Site), and for no other request: a page holds its
// session's CSRF token and echoes text of the request, which compressed
// pages fetched by another site's page would give away (BREACH).
func TestPagesAreCompressedOnlyForTheirOwnSite(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	// Enough queues for /live to be worth compressing.
	for range 10 {
		pgtest.NewQueue(t, st, "dash_gzip")
	}
	addr := serve(t, st, serverOpts{})
	const gz = "gzip, deflate, br, zstd"
	for _, c := range []struct {
		path, site, accept string
		gzip               bool
	}{
		{"/", "same-origin", gz, true},
		{"/", "none", gz, true},
		{"/live", "same-origin", gz, true},
		{"/", "cross-site", gz, false},
		{"/", "same-site", gz, false},
		{"/", "", gz, false},
		{"/", "same-origin", "", false},
		{"/", "same-origin", "gzip;q=0, deflate", false},
	} {
		resp, body := fetch(t, addr, c.path+"?name=dash_gzip", map[string]string{"Sec-Fetch-Site": c.site, "Accept-Encoding": c.accept})
		if vary := strings.Join(resp.Header.Values("Vary"), ", "); !strings.Contains(vary, "Accept-Encoding") || !strings.Contains(vary, "Sec-Fetch-Site") {
			t.Errorf("GET %s from %q: Vary %q, want Accept-Encoding and Sec-Fetch-Site", c.path, c.site, vary)
		}
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("GET %s from %q accepting %q: compressed %v, want %v", c.path, c.site, c.accept, got, c.gzip)
			continue
		}
		if c.gzip {
			zr, err := gzip.NewReader(strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("GET %s: the compressed body does not decompress: %v", c.path, err)
			}
		}
		want := `data-page="overview"`
		if c.path == "/live" {
			want = `"queue_stats":[{"queue":"dash_gzip`
		}
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s from %q: the body lacks %s:\n%.2000s", c.path, c.site, want, body)
		}
	}
}
