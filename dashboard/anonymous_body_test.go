package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// With a token set, a request that is not logged in may send a small
// body only: it could only be refused, and its bytes would hold the
// server's room for bodies. A logged-in browser and a script with the
// token send the usual sizes.
func TestBodyOfARequestNotLoggedIn(t *testing.T) {
	t.Parallel()
	token := newToken(t)
	addr := serve(t, pgtest.Store(t), serverOpts{token: token})
	form := url.Values{"payload": {strings.Repeat("x", 100<<10)}}

	stranger := newBrowser(t, addr)
	code, body, _ := stranger.post("/dlq/retry", form, nil)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "as many as a request that is not logged in may send; log in") {
		t.Errorf("a 100 KB form not logged in: %d %.300q; want 413 saying to log in", code, body)
	}
	if code, _, _ := stranger.post("/dlq/retry", url.Values{"payload": {"{}"}}, nil); code != http.StatusUnauthorized {
		t.Errorf("a small form not logged in: %d; want 401 from the dashboard", code)
	}

	person := newBrowser(t, addr)
	person.login(token)
	if code, body, _ := person.post("/dlq/retry", form, nil); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("a 100 KB form logged in, without its CSRF token: %d %.300q; want it read, and refused for the token", code, body)
	}
	script := newBrowser(t, addr)
	if code, body, _ := script.post("/dlq/retry", form, http.Header{"Authorization": {"Bearer " + token}}); code == http.StatusRequestEntityTooLarge {
		t.Errorf("a 100 KB form with the bearer token: %d %.300q; want it read", code, body)
	}
}
