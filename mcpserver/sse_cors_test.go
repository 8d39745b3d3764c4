package mcpserver_test

import (
	"net/http"
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
)

// The event stream of the SSE transport does not tell browsers that any
// origin may read it (Access-Control-Allow-Origin: *), which mcp-go says
// unless told which origins may: the server refuses foreign origins, and
// names only those --allowed-origins gives.
func TestSSEStreamNamesNoOtherOrigin(t *testing.T) {
	t.Parallel()
	d := deps(t, testStore(t))
	const app = "https://app.example.com"
	for _, tc := range []struct {
		allowed []string
		origin  string
		want    string
	}{
		{nil, "", ""},
		{nil, "http://localhost:5173", ""},
		{[]string{app}, "", ""},
		{[]string{app}, app, app},
	} {
		base := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE, AllowedOrigins: tc.allowed})
		req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, base+mcpserver.PathSSE, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Header.Values("Access-Control-Allow-Origin")
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || (tc.want == "" && len(got) > 0) || (tc.want != "" && (len(got) != 1 || got[0] != tc.want)) {
			t.Errorf("allowed origins %v, Origin %q: %d, Access-Control-Allow-Origin %q; want 200 and %q", tc.allowed, tc.origin, resp.StatusCode, got, tc.want)
		}
	}
}
