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

// Failures of each code are told at their first time and then once a
// minute, with the count of those met untold meanwhile; codes are paced
// apart.
func TestByCode(t *testing.T) {
	t.Parallel()
	var b quietlog.ByCode
	start := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	if told, quiet := b.Due(404, start); !told || quiet != 0 {
		t.Fatalf("first 404: told %v, quiet %d; want told, 0", told, quiet)
	}
	for s := 1; s <= 10; s++ {
		if told, _ := b.Due(404, start.Add(time.Duration(s)*time.Second)); told {
			t.Fatalf("a 404 %ds after the first was told", s)
		}
	}
	if told, _ := b.Due(401, start.Add(5*time.Second)); !told {
		t.Fatal("the first 401, after 404s, was not told")
	}
	if told, quiet := b.Due(404, start.Add(61*time.Second)); !told || quiet != 10 {
		t.Fatalf("a 404 a minute later: told %v, quiet %d; want told, 10", told, quiet)
	}
}
