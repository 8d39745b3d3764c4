package store

import (
	"sync"
	"time"
)

// DropFrozenConnections is DropConnections for a call begun at start and
// given up because its connection stopped answering (its deadline passed
// while its caller still waited): the path that froze it froze the pool's
// other connections with it, and each of them, handed out in turn, would
// cost one more deadline. It drops them once per freeze: every call under
// way when a path froze is given up, each at its own deadline, on a
// connection the first drop already dropped, so only a call begun after
// the last drop, which froze on a connection made since, drops them
// again. Such a call lasted its whole deadline, so drops are at least a
// deadline apart. It reports whether it dropped them. The engine's
// workers and the operations layer share it through the Store, so that a
// freeze seen by both drops the pool once.
func (s *Store) DropFrozenConnections(start time.Time) bool {
	if !s.drops.due(start) {
		return false
	}
	s.DropConnections()
	return true
}

// connDrops notes when the pool's connections were last dropped for a
// call given up.
type connDrops struct {
	mu   sync.Mutex
	last time.Time // when the pool's connections were last dropped
}

// due reports whether a call begun at start and given up calls for a
// drop, and notes the drop when it does.
func (d *connDrops) due(start time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if start.Before(d.last) {
		return false
	}
	d.last = time.Now()
	return true
}

// readOnlyRenewal is how often RenewReadOnlyConnections drops the pool's
// connections at most.
const readOnlyRenewal = 10 * time.Second

// RenewReadOnlyConnections drops the pool's connections (those in use as
// they are released) after a write was refused by a read-only
// transaction, at most once per readOnlyRenewal: default_transaction_read_only
// set for a role or database holds for a session from its start, so the
// connections made while it was on went on refusing writes after it was
// turned off, until something else replaced them. On a standby the new
// connections refuse writes as well, at the cost of a reconnection every
// few seconds while writes are tried.
func (s *Store) RenewReadOnlyConnections() {
	if s.readOnlyDrops.due(time.Now().Add(-readOnlyRenewal)) {
		s.DropConnections()
	}
}
