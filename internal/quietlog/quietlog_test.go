package quietlog_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/quietlog"
)

// A failure met at every probe is told at its first time, then once a
// minute; after a success, the next failure is told at once.
func TestLog(t *testing.T) {
	t.Parallel()
	var q quietlog.Log
	start := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	var told []int
	for s := 0; s <= 150; s += 5 { // a probe every 5 seconds
		if q.Due(start.Add(time.Duration(s) * time.Second)) {
			told = append(told, s)
		}
	}
	if len(told) != 3 || told[0] != 0 || told[1] != 60 || told[2] != 120 {
		t.Fatalf("a failure at every probe for 150s was told at %v seconds, want 0, 60 and 120", told)
	}
	q.OK()
	if !q.Due(start.Add(155 * time.Second)) {
		t.Fatal("a failure after a success was not told at once")
	}
}
