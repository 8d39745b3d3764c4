// Package quietlog tells a log of a failure that repeats, such as an
// outage met by every probe, scrape or page request, at its first time
// and then once a minute while it lasts: the lines of a failure told at
// every meeting grow with the probes, scrapers and open pages, not with
// the failure.
package quietlog

import (
	"sync"
	"time"
)

// Every is how often a failure that goes on is told again.
const Every = time.Minute

// Log is the memory of one kind of failure told to a log. Its zero value
// has told nothing; it is safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	last time.Time
}

// Due reports whether the failure met at now is to be told, and notes it
// told when so.
func (l *Log) Due(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < Every {
		return false
	}
	l.last = now
	return true
}

// OK notes a success: the next failure is told at once.
func (l *Log) OK() {
	l.mu.Lock()
	l.last = time.Time{}
	l.mu.Unlock()
}
