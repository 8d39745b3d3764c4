package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// A duration of Options given as a bare number, meant as seconds or
// minutes but read as nanoseconds (StaleAfter: 30 counted every worker
// stale, StallAfter: 5 every queue with a ready message stalled), or a
// negative one where none means anything, is refused, naming the field
// and a time.Duration to give; the least value is taken, zero keeps the
// default and ReadLockWait's negative (no lock bound of its own) stays.
func TestNewRefusesDurationsBelowTheirLeast(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for _, c := range []struct {
		field string
		set   func(*ops.Options, time.Duration)
		bad   time.Duration
		says  string
		give  string // the time.Duration the error suggests
	}{
		{"StaleAfter", func(o *ops.Options, d time.Duration) { o.StaleAfter = d }, 30, "Options.StaleAfter 30ns is shorter than 1ms", "30 * time.Second"},
		{"StaleAfter", func(o *ops.Options, d time.Duration) { o.StaleAfter = d }, -time.Second, "Options.StaleAfter -1s is negative", "30 * time.Second"},
		{"StallAfter", func(o *ops.Options, d time.Duration) { o.StallAfter = d }, 5, "Options.StallAfter 5ns is shorter than 1ms", "5 * time.Minute"},
		{"StallAfter", func(o *ops.Options, d time.Duration) { o.StallAfter = d }, -time.Minute, "Options.StallAfter -1m0s is negative", "5 * time.Minute"},
		{"OldTransactionAfter", func(o *ops.Options, d time.Duration) { o.OldTransactionAfter = d }, 600, "Options.OldTransactionAfter 600ns is shorter than 1ms", "10 * time.Minute"},
		{"OldTransactionAfter", func(o *ops.Options, d time.Duration) { o.OldTransactionAfter = d }, -time.Second, "Options.OldTransactionAfter -1s is negative", "10 * time.Minute"},
		{"ReadLockWait", func(o *ops.Options, d time.Duration) { o.ReadLockWait = d }, 3, "Options.ReadLockWait 3ns is shorter than 1ms", "3 * time.Second"},
	} {
		var opts ops.Options
		c.set(&opts, c.bad)
		svc, err := ops.New(s, opts)
		if svc != nil || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "such as "+c.give) {
			t.Errorf("%s %s: New made a service: %t, err %v; want ErrInvalid saying %q and suggesting %s", c.field, c.bad, svc != nil, err, c.says, c.give)
		}
		for _, ok := range []time.Duration{time.Millisecond, 0} {
			c.set(&opts, ok)
			if svc, err := ops.New(s, opts); svc == nil || err != nil {
				t.Errorf("%s %s: New made a service: %t, err %v; want a service", c.field, ok, svc != nil, err)
			}
		}
	}
	if svc, err := ops.New(s, ops.Options{ReadLockWait: -1}); svc == nil || err != nil {
		t.Errorf("ReadLockWait -1 (none of its own): New made a service: %t, err %v", svc != nil, err)
	}
}
