package cli

import (
	"testing"
	"time"
)

// ago says how long ago a time was, or how long until it comes; a time
// less than a second ahead is not "in 0s", which reads as overdue.
func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		from time.Duration
		want string
	}{
		{500 * time.Millisecond, "in <1s"},
		{time.Second, "in 1s"},
		{90 * time.Second, "in 1m"},
		{0, "just now"},
		{-100 * time.Millisecond, "just now"},
		{-3 * time.Hour, "3h ago"},
		{2*time.Hour - time.Second, "in 1h59m"},
		{-(90*time.Minute + 30*time.Second), "1h30m ago"},
		{47 * time.Hour, "in 47h"},
		{72 * time.Hour, "in 3d"},
		{8*24*time.Hour - time.Second, "in 7d23h"},
	} {
		if got := agoAt(now.Add(c.from), now); got != c.want {
			t.Errorf("agoAt(now%+v) = %q, want %q", c.from, got, c.want)
		}
	}
	// Times past the range of a duration (a row's enqueued_at set to the
	// year 9999) read as far off, not as a negative number of seconds.
	for at, want := range map[time.Time]string{
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC): "in 106751d23h",
		time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC):      "106751d23h ago",
	} {
		if got := agoAt(at, now); got != want {
			t.Errorf("agoAt(%s) = %q, want %q", at, got, want)
		}
	}
	if got := agoAt(time.Time{}, time.Now()); got != "-" {
		t.Errorf("ago(zero) = %q, want -", got)
	}
}
