// Package throttle bounds how fast one client may guess a secret: the
// token of the dashboard's login, or the bearer token of the HTTP
// endpoints. After a number of wrong guesses within a window, a client's
// further attempts are refused until the oldest of them leaves the window,
// without the secret being compared at all.
package throttle

import (
	"container/list"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/pgbus/pgbus/internal/clientaddr"
)

// Limiter counts the failed attempts of each client address.
type Limiter struct {
	mu       sync.Mutex
	max      int           // failures allowed within window
	window   time.Duration // how long a failure counts
	capacity int           // clients tracked at most
	clients  map[string]*list.Element
	// order holds the clients' *failures, the one that tried last first:
	// its back is the one evicted when the table is full.
	order *list.List
}

// failures are one client's failed attempts, oldest first, at most max.
type failures struct {
	key   string
	times []time.Time
}

// New returns a limiter that allows each client maxFailures failures
// within window, and remembers at most capacity clients: a flood of
// distinct addresses evicts the longest-quiet ones instead of growing the
// table.
func New(maxFailures int, window time.Duration, capacity int) *Limiter {
	return &Limiter{max: maxFailures, window: window, capacity: capacity, clients: map[string]*list.Element{}, order: list.New()}
}

// Take counts an attempt of the client as a failure before its secret is
// compared, so that concurrent guesses cannot all slip in before the first
// is counted: it returns how many failures count now, or, when the
// client's failures fill the window already, false and how long until it
// may try again (this attempt is not counted). A success gives its attempt
// back with Refund.
func (l *Limiter) Take(key string, now time.Time) (int, time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.clients[key]
	if !ok {
		for l.order.Len() >= l.capacity {
			oldest := l.order.Back()
			l.order.Remove(oldest)
			delete(l.clients, oldest.Value.(*failures).key)
		}
		e = l.order.PushFront(&failures{key: key})
		l.clients[key] = e
	}
	// The client that tried last is the last to be forgotten, refused or
	// not: a flood of other addresses must outlast its window to free it.
	l.order.MoveToFront(e)
	f := e.Value.(*failures)
	f.prune(now, l.window)
	if len(f.times) >= l.max {
		// Only the last max failures can ever decide a refusal, and a
		// refused attempt adds none: the slice never holds more.
		return len(f.times), f.times[len(f.times)-l.max].Add(l.window).Sub(now), false
	}
	f.times = append(f.times, now)
	return len(f.times), 0, true
}

// Refund takes back the attempt Take counted at the time at: it
// succeeded, and successes are not limited.
func (l *Limiter) Refund(key string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.clients[key]
	if !ok {
		return
	}
	f := e.Value.(*failures)
	for i := len(f.times) - 1; i >= 0; i-- {
		if f.times[i].Equal(at) {
			f.times = append(f.times[:i], f.times[i+1:]...)
			break
		}
	}
	if len(f.times) == 0 {
		l.order.Remove(e)
		delete(l.clients, key)
	}
}

// Tracked is how many clients the limiter remembers.
func (l *Limiter) Tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// prune drops the failures that left the window.
func (f *failures) prune(now time.Time, window time.Duration) {
	i := 0
	for i < len(f.times) && !f.times[i].Add(window).After(now) {
		i++
	}
	f.times = f.times[i:]
}

// ClientKey is the address an attempt is counted against: the host
// of the connection's remote address, or, when that is a trusted proxy,
// the client it names in X-Forwarded-For (forwardedClient). A header is
// never believed otherwise: X-Forwarded-For would let a client pick a
// fresh address for every guess. An IPv6 client usually holds a whole
// /64, so it counts as one.
func ClientKey(r *http.Request, trusted []netip.Prefix) string {
	addr, ok := clientaddr.Of(r, trusted)
	if !ok {
		return clientaddr.Name(r, trusted)
	}
	if addr.Is6() {
		p, err := addr.Prefix(64)
		if err == nil {
			return p.String()
		}
	}
	return addr.String()
}
