package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// SyncClock measures how far the server's clock is from this process's,
// and Now then gives the server's time: on a server three hours behind,
// Now is within a minute of the server's now(), not of this clock.
func TestNowIsTheServersClock(t *testing.T) {
	t.Parallel()
	st := pgtest.SkewedStore(t, "-3h")
	skew, err := st.SyncClock(pgtest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if skew > -3*time.Hour+time.Minute || skew < -3*time.Hour-time.Minute {
		t.Errorf("SyncClock measured %s; want about -3h", skew)
	}
	if got, at := st.ClockSkew(); got != skew || at.IsZero() {
		t.Errorf("ClockSkew() = %s, %s; want %s and when it was measured", got, at, skew)
	}
	var server time.Time
	if err := st.Pool().QueryRow(pgtest.Context(t), `SELECT clock_timestamp()`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if d := st.Now().Sub(server).Abs(); d > time.Minute {
		t.Errorf("Now() is %s from the server's clock; want it within a minute", d)
	}
}

// A server beside this process (the same clock) is no distance away, however
// unevenly the round trip that measured it was split: a query held 300 ms on
// its way to the server reads the server's time near the end of the round
// trip, and once made every time this process took from Now 150 ms late.
func TestSyncClockOnTheSameClockIsZero(t *testing.T) {
	t.Parallel()
	proxy := pgtest.NewFreezingProxy(t, pgtest.URL(t))
	st := pgtest.OpenStore(t, proxy.URL())
	proxy.DelayWhenSent("clock_timestamp", 300*time.Millisecond)
	skew, err := st.SyncClock(pgtest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if skew != 0 {
		t.Errorf("SyncClock measured %s on the same clock; want 0", skew)
	}
	if got, _ := st.ClockSkew(); got != 0 {
		t.Errorf("ClockSkew() = %s; want 0", got)
	}
}
