package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// Served alone (pgbus dashboard), the dashboard tells an MCP client that
// calls /mcp that there is no MCP endpoint here, in JSON, whatever its
// token, rather than to log in or that its form expired; and its page of
// an unknown path names no /mcp. Served beside /mcp (pgbus serve), that
// page names it.
func TestDashboardAloneSaysItHasNoMCPEndpoint(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	token := newToken(t)
	h, err := dashboard.New(newService(t, st), dashboard.Config{AuthToken: token})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, bearer string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, bearer := range []string{"", token} {
		rec := call(http.MethodPost, "/mcp", bearer)
		var body struct{ Error string }
		if rec.Code != http.StatusNotFound || json.Unmarshal(rec.Body.Bytes(), &body) != nil || !strings.Contains(body.Error, "without an MCP endpoint") {
			t.Errorf("POST /mcp with bearer %v: %d %s\n%s", bearer != "", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	if rec := call(http.MethodGet, "/nope", token); rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "/mcp") || !strings.Contains(rec.Body.String(), "has no page /nope") {
		t.Errorf("GET /nope of the dashboard alone: %d\n%s", rec.Code, rec.Body)
	}

	b := newBrowser(t, serve(t, st, serverOpts{}))
	if code, page, _ := b.get("/nope"); code != http.StatusNotFound || !strings.Contains(page, "The MCP endpoint is /mcp") {
		t.Errorf("GET /nope of pgbus serve: %d\n%s", code, page)
	}
}
