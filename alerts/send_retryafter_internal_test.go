package alerts

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A receiver that is rate limiting (429) or unavailable (503) says in
// Retry-After, in seconds or as a date, when to come back: the next
// attempt waits that long rather than the backoff's second, which would
// spend the attempts while the limit lasts and give the alert up.
func TestRetryWaitsForRetryAfter(t *testing.T) {
	t.Parallel()
	behind := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	for name, c := range map[string]struct {
		code  int
		after func() string
		want  string
	}{
		"seconds": {http.StatusTooManyRequests, func() string { return "90" }, "in=1m30s"},
		"date": {http.StatusServiceUnavailable, func() string {
			return time.Now().Add(2*time.Hour + 30*time.Second).UTC().Format(http.TimeFormat)
		}, "in=15m0s"}, // maxRetryAfter
		// A date is a time on the receiver's clock, measured from its
		// Date: here 10 minutes behind this one, where measured on this
		// clock it was long past and the retry did not wait at all.
		"date on a clock behind": {http.StatusServiceUnavailable, func() string {
			return behind.Add(30 * time.Second).Format(http.TimeFormat)
		}, "in=30s"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Date", behind.Format(http.TimeFormat))
				w.Header().Set("Retry-After", c.after())
				http.Error(w, "slow down", c.code)
			}))
			defer srv.Close()
			var logs pgtest.SyncBuffer
			cfg := Config{URL: srv.URL, RetryBackoff: time.Millisecond, RetryBackoffMax: time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}.withDefaults()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan bool)
			go func() { done <- newSender(cfg).deliver(ctx, Alert{Text: "x"}) }()
			pgtest.Eventually(t, 30*time.Second, "a retry logged", func() bool { return strings.Contains(logs.String(), "retrying") })
			cancel()
			if <-done {
				t.Fatal("an alert never accepted counted as sent")
			}
			line := logs.String()
			if !strings.Contains(line, c.want) {
				t.Fatalf("the retry does not wait as Retry-After says (%s):\n%s", c.want, line)
			}
		})
	}
}
