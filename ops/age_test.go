package ops_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// An age repeated in a next step reads as a person writes it, and reads
// back as the same age.
func TestFormatAgeReadsBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {30 * time.Minute, "30m"}, {90 * time.Minute, "1h30m"}, {72 * time.Hour, "3d"},
		{25 * time.Hour, "25h"}, {90 * time.Second, "1m30s"}, {1500 * time.Millisecond, "1.5s"}, {30 * 24 * time.Hour, "30d"},
	} {
		got := ops.FormatAge(c.d)
		if got != c.want {
			t.Errorf("FormatAge(%s) = %q, want %q", c.d, got, c.want)
		}
		if back, err := ops.ParseAge(got); err != nil || back != c.d {
			t.Errorf("ParseAge(%q) = %s, %v; want %s", got, back, err, c.d)
		}
	}
}
