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
