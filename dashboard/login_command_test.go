package dashboard_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// The dashboard's login messages (its login page, a wrong token, too many
// of them, a page, form or count asked for without logging in) name the
// token of the command that serves it: pgbus dashboard when it is served
// alone, pgbus serve beside /mcp. They said pgbus serve --auth-token to
// the person who ran pgbus dashboard.
func TestLoginMessagesNameTheCommandServingTheDashboard(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	for _, c := range []struct {
		name, mcp, says, not string
	}{
		{"alone", "", "pgbus dashboard --auth-token", "pgbus serve --"},
		{"beside /mcp", "/mcp", "pgbus serve --transport http --auth-token", "pgbus dashboard"},
	} {
		token := newToken(t)
		h, err := dashboard.New(svc, dashboard.Config{AuthToken: token, MCP: c.mcp})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, rec *httptest.ResponseRecorder, status int) {
			t.Helper()
			body := html.UnescapeString(rec.Body.String())
			if rec.Code != status || !strings.Contains(body, c.says) || strings.Contains(body, c.not) {
				t.Errorf("%s: %s: %d\n%s\nwant %d naming %q, not %q", c.name, what, rec.Code, body, status, c.says, c.not)
			}
		}
		do := func(method, path string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, path, nil)
			req.RemoteAddr = "192.0.2.20:40000"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		check("GET /login", do(http.MethodGet, "/login"), http.StatusOK)
		check("GET /live without logging in", do(http.MethodGet, "/live"), http.StatusUnauthorized)
		check("POST /queues/pause without logging in", do(http.MethodPost, "/queues/pause"), http.StatusUnauthorized)
		guesser := client{t: t, h: h, remote: "192.0.2.21:40000"}
		check("a wrong token", guesser.loginWith("not-the-token", nil), http.StatusUnauthorized)
		for i := range 4 {
			guesser.loginWith("not-the-token-"+strconv.Itoa(i), nil)
		}
		check("too many wrong tokens", guesser.loginWith(token, nil), http.StatusTooManyRequests)
	}
}
