package dashboard

import (
	"container/list"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/pgbus/pgbus/internal/clientaddr"
)

// Login throttling: the login form takes the server's token, so guessing
// it is bounded by how fast one client may try. After loginMaxFailures
// wrong tokens within loginWindow, a client's further attempts are refused
// until the oldest of them leaves the window, without the token being
// compared at all.
const (
	loginMaxFailures = 5
	loginWindow      = time.Minute
	// loginMaxClients bounds the memory of the throttle: a flood of
	// distinct addresses evicts the longest-quiet ones instead of growing
	// the table.
	loginMaxClients = 10_000
)

// loginLimiter counts the failed logins of each client address.
type loginLimiter struct {
	mu       sync.Mutex
	max      int           // failures allowed within window
	window   time.Duration // how long a failure counts
	capacity int           // clients tracked at most
	clients  map[string]*list.Element
	// order holds the clients' *failures, the one that tried last first:
	// its back is the one evicted when the table is full.
	order *list.List
}

// failures are one client's failed logins, oldest first, at most max.
type failures struct {
	key   string
	times []time.Time
}

func newLoginLimiter(maxFailures int, window time.Duration, capacity int) *loginLimiter {
	return &loginLimiter{max: maxFailures, window: window, capacity: capacity, clients: map[string]*list.Element{}, order: list.New()}
}

// take counts an attempt of the client as a failure before its token is
// compared, so that concurrent guesses cannot all slip in before the first
// is counted: it returns how many failures count now, or, when the
// client's failures fill the window already, false and how long until it
// may try again (this attempt is not counted). A success gives its attempt
// back with refund.
func (l *loginLimiter) take(key string, now time.Time) (int, time.Duration, bool) {
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

// refund takes back the attempt take counted at the time at: it
// succeeded, and successes are not limited.
func (l *loginLimiter) refund(key string, at time.Time) {
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

// tracked is how many clients the limiter remembers.
func (l *loginLimiter) tracked() int {
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

// clientKey is the address a login attempt is counted against: the host
// of the connection's remote address, or, when that is a trusted proxy,
// the client it names in X-Forwarded-For (forwardedClient). A header is
// never believed otherwise: X-Forwarded-For would let a client pick a
// fresh address for every guess. An IPv6 client usually holds a whole
// /64, so it counts as one.
func clientKey(r *http.Request, trusted []netip.Prefix) string {
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
