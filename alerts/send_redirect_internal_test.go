package alerts

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A webhook that answers with a redirect is not followed: a 302 would
// turn the POST into a GET without the alert, which the next host answers
// with 200, and a 307 would hand the alert and alerts.headers (a token)
// to another host. The alert is not counted as sent, the other host is
// never asked, and the log says where the webhook points and what to set.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var elsewhere atomic.Int64
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
			}))
			defer other.Close()
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/collect/PathSecret77", code)
			}))
			defer hook.Close()
			var logs pgtest.SyncBuffer
			cfg := Config{URL: hook.URL, Headers: map[string]string{"X-Api-Key": "KeySecret55"},
				RetryBackoff: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}.withDefaults()
			if newSender(cfg).deliver(context.Background(), Alert{Text: "queue orders is STALLED"}) {
				t.Fatal("an alert the webhook redirected counted as sent")
			}
			if n := elsewhere.Load(); n != 0 {
				t.Fatalf("the host redirected to got %d requests; want none", n)
			}
			out := logs.String()
			if !strings.Contains(out, "redirect") || !strings.Contains(out, other.URL+"/…") || !strings.Contains(out, "set alerts.url") {
				t.Fatalf("the log does not say where the webhook redirects and what to set:\n%s", out)
			}
			if strings.Contains(out, "PathSecret77") {
				t.Fatalf("the log shows the path redirected to:\n%s", out)
			}
		})
	}
}
