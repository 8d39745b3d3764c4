package dashboard_test

import (
	"encoding/json"
	"io"
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
	t.Parallel()
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

// The address of an action opened as a page (the page after a retry,
// opened again from its address) is refused with 405 and what to do, not
// said to be no page of the dashboard; a page sent another method is
// refused with the method it takes; an unknown path is still not found.
func TestWrongMethodSaysWhatTheAddressTakes(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	b := newBrowser(t, serve(t, st, serverOpts{}))
	b.get("/")
	for _, c := range []struct {
		method, path, allow, says string
	}{
		{http.MethodGet, "/dlq/message/retry", "POST", "is where a form of the dashboard is sent (POST), not a page to open: nothing was changed"},
		{http.MethodGet, "/queues/pause", "POST", "not a page to open"},
		{http.MethodPut, "/dlq", "GET", "PUT /dlq: this address takes only GET. Nothing was changed."},
		{http.MethodDelete, "/dlq/retry", "GET, POST", "takes only GET and POST"},
	} {
		req, _ := http.NewRequest(c.method, b.base+c.path, nil)
		resp, err := b.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow || !strings.Contains(string(body), c.says) {
			t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q, saying %q\n%s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow, c.says, body)
		}
	}
	if code, page, _ := b.get("/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: %d, want 404\n%s", code, page)
	}
}
