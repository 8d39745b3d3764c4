package store

import (
	"testing"
	"time"
)

// How long ago a deadline passed reads in days beyond two, not in
// thousands of hours.
func TestSinceWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90*time.Minute + 1500*time.Millisecond: "1h30m2s",
		47 * time.Hour:                         "47h",
		5 * time.Minute:                        "5m",
		48 * time.Hour:                         "2d",
		60772*time.Hour + 29*time.Minute:       "2532d4h",
	} {
		if got := sinceWords(d); got != want {
			t.Errorf("sinceWords(%v) = %q; want %q", d, got, want)
		}
	}
}
