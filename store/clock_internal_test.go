package store

import (
	"testing"
	"time"
)

// A server time within the round trip is no skew; outside it, the skew is
// measured from the round trip's middle, to the millisecond.
func TestClockSkewFromOneRoundTrip(t *testing.T) {
	sent := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	took := 100 * time.Millisecond
	cases := []struct {
		server time.Time
		want   time.Duration
	}{
		{sent, 0},
		{sent.Add(took), 0},
		{sent.Add(took + time.Microsecond), 0}, // the server's resolution
		{sent.Add(-time.Microsecond), 0},
		{sent.Add(99 * time.Millisecond), 0},
		{sent.Add(took + 10*time.Millisecond), 60 * time.Millisecond},
		{sent.Add(-10 * time.Millisecond), -60 * time.Millisecond},
		{sent.Add(-3 * time.Hour), -3*time.Hour - 50*time.Millisecond},
		{sent.Add(2 * time.Hour), 2*time.Hour - 50*time.Millisecond},
	}
	for _, c := range cases {
		if got := clockSkew(sent, took, c.server); got != c.want {
			t.Errorf("clockSkew(server %s after sending) = %s, want %s", c.server.Sub(sent), got, c.want)
		}
	}
}
