package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/dashboard"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// Refused requests are told to the log once a minute for each status,
// with the count refused meanwhile: a scanner's 404s, or an open page's
// live counts after its login ended, logged a line for each request.
func TestRefusedRequestsAreLoggedOnceAMinute(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	clk := &clock{now: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)}
	var logs pgtest.SyncBuffer
	h, err := dashboard.New(newService(t, st), dashboard.Config{AuthToken: newToken(t), Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	for range 20 {
		if code := get("/live"); code != http.StatusUnauthorized {
			t.Fatalf("GET /live without a login: %d, want 401", code)
		}
	}
	if n := strings.Count(logs.String(), "request refused"); n != 1 {
		t.Fatalf("20 refusals within a minute logged %d lines, want 1:\n%s", n, logs.String())
	}
	clk.add(61 * time.Second)
	get("/live")
	if got := logs.String(); strings.Count(got, "request refused") != 2 || !strings.Contains(got, "refused_unlogged=19") {
		t.Fatalf("a refusal a minute later: want a second line counting the 19 unlogged:\n%s", got)
	}
}
