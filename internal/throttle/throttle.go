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

// Attempt decides an attempt of the client under the limiter's lock: when
// the client's failures fill the window, it is refused without right being
// called, wait saying how long until the client may try again; otherwise
// right is called, and a wrong attempt counts as a failure (failed is
// how many count now). With the lock held across right, attempts sent at
// once are decided one by one: they get no more tries than attempts sent
// one by one, and right ones never count, however many arrive together.
// right must be quick, as a constant-time compare of digests is. now is
// the clock, read under the lock so that each client's failures stay in
// order.
func (l *Limiter) Attempt(key string, now func() time.Time, right func() bool) (ok bool, failed int, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := now()
	if e, tracked := l.clients[key]; tracked {
		f := e.Value.(*failures)
		f.prune(at, l.window)
		if len(f.times) >= l.max {
			// Only the last max failures can ever decide a refusal, and a
			// refused attempt adds none: the slice never holds more.
			l.order.MoveToFront(e)
			return false, len(f.times), f.times[len(f.times)-l.max].Add(l.window).Sub(at)
		}
	}
	if right() {
		return true, 0, 0
	}
	f := l.track(key)
	f.times = append(f.times, at)
	return false, len(f.times), 0
}

// track returns the failures of the client, tracking it first if it was
// not, and makes it the latest to try: the client that tried last is the
// last to be forgotten, refused or not, so a flood of other addresses must
// outlast its window to free it.
func (l *Limiter) track(key string) *failures {
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
	l.order.MoveToFront(e)
	return e.Value.(*failures)
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
