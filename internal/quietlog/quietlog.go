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

// ByCode is the memory of failures of several kinds, such as the statuses
// of refused requests: each code is told at its first time, then once a
// minute with the count of those met meanwhile, so that a scanner does not
// fill the log with a line per request. Its zero value has told nothing;
// it is safe for concurrent use.
type ByCode struct {
	mu sync.Mutex
	by map[int]*counted
}

type counted struct {
	told  time.Time
	quiet int
}

// Due reports whether a failure of code met at now is to be told, and how
// many of that code were met untold since the last one told.
func (b *ByCode) Due(code int, now time.Time) (told bool, quiet int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[int]*counted{}
	}
	f := b.by[code]
	if f == nil {
		f = &counted{}
		b.by[code] = f
	}
	if !f.told.IsZero() && now.Sub(f.told) < Every {
		f.quiet++
		return false, 0
	}
	quiet, f.quiet, f.told = f.quiet, 0, now
	return true, quiet
}
