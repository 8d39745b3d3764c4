package cli

import (
	"testing"
	"time"
)

// ago says how long ago a time was, or how long until it comes; a time
// less than a second ahead is not "in 0s", which reads as overdue.
func TestAgo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from time.Duration
		want string
	}{
		{600 * time.Millisecond, "in <1s"},
		{90 * time.Second, "in 1m"},
		{-100 * time.Millisecond, "just now"},
		{-3 * time.Hour, "3h ago"},
	} {
		if got := ago(time.Now().Add(c.from)); got != c.want {
			t.Errorf("ago(now%+v) = %q, want %q", c.from, got, c.want)
		}
	}
	if got := ago(time.Time{}); got != "-" {
		t.Errorf("ago(zero) = %q, want -", got)
	}
}
