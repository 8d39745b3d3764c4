package dashboard

import (
	"testing"
	"time"
)

// A page says how long ago a time was, or how long until it comes; a time
// past the range of a duration (a row's enqueued_at set to the year 9999)
// is far off, not "just now".
func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	v := &view{now: now}
	for at, want := range map[time.Time]string{
		now.Add(-3 * time.Second):                     "just now",
		now.Add(-90 * time.Second):                    "1 min ago",
		now.Add(3 * time.Hour):                        "in 3 h",
		now.Add(2*time.Hour - time.Second):            "in 1 h 59 min",
		now.Add(8*24*time.Hour - time.Second):         "in 7 days 23 h",
		now.Add(3 * time.Second):                      "in 3s",
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC): "in 106751 days 23 h",
		time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC):      "106751 days 23 h ago",
		{}:                                            "never",
	} {
		if got := v.ago(at); got != want {
			t.Errorf("ago(%s) = %q, want %q", at, got, want)
		}
	}
}
