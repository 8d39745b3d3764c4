package metrics_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/metrics"
)

// A path Mux does not serve answers 404 naming the path asked for and the
// ones it serves, so that a scrape or probe configured with a typo says
// what to fix.
func TestMuxUnknownPath(t *testing.T) {
	t.Parallel()
	base := serve(t, metrics.Mux(prometheus.NewRegistry(), nil, metrics.ProbeOptions{}))
	for _, path := range []string{"/", "/metric", "/metrics/extra", "/healthz"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d; want 404", path, resp.StatusCode)
		}
		for _, want := range []string{"no endpoint " + path + " here", "scrape " + metrics.PathMetrics, metrics.PathLivez} {
			if !strings.Contains(string(body), want) {
				t.Errorf("GET %s answered %q; want it to say %q", path, body, want)
			}
		}
		// Without an operations service it serves no readiness probe,
		// so it names none.
		if strings.Contains(string(body), metrics.PathReadyz) {
			t.Errorf("GET %s answered %q, naming %s, which this server does not serve", path, body, metrics.PathReadyz)
		}
	}
}
