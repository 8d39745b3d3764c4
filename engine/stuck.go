package engine

import (
	"slices"
	"sync"

	"github.com/pgbus/pgbus/store"
)

// stuckHandlers are the handlers this process gave up on for ignoring
// their context that still run, for its heartbeat to tell health: their
// messages stay hidden until they return, which only this process knows.
type stuckHandlers struct {
	mu   sync.Mutex
	next int
	all  map[int]store.StuckHandler
}

// add notes h until exited is closed, when its handler returns.
func (s *stuckHandlers) add(h store.StuckHandler, exited <-chan struct{}) {
	s.mu.Lock()
	if s.all == nil {
		s.all = map[int]store.StuckHandler{}
	}
	id := s.next
	s.next++
	s.all[id] = h
	s.mu.Unlock()
	go func() {
		<-exited
		s.mu.Lock()
		delete(s.all, id)
		s.mu.Unlock()
	}()
}

// oldest returns how many there are, and the oldest, at most max.
func (s *stuckHandlers) oldest(max int) (int, []store.StuckHandler) {
	s.mu.Lock()
	list := make([]store.StuckHandler, 0, len(s.all))
	for _, h := range s.all {
		list = append(list, h)
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b store.StuckHandler) int { return a.GivenUpAt.Compare(b.GivenUpAt) })
	return len(list), list[:min(len(list), max)]
}
