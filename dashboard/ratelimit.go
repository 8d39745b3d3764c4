package dashboard

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
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
	// order holds the clients' *failures, the most recently failed first:
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

// blocked reports whether the client may not try now, and if so how long
// until it may.
func (l *loginLimiter) blocked(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.clients[key]
	if !ok {
		return 0, false
	}
	f := e.Value.(*failures)
	f.prune(now, l.window)
	if len(f.times) == 0 {
		// Nothing counts any more: forget the client.
		l.order.Remove(e)
		delete(l.clients, key)
		return 0, false
	}
	if len(f.times) < l.max {
		return 0, false
	}
	return f.times[0].Add(l.window).Sub(now), true
}

// fail records a failed login of the client, and returns how many of its
// failures count now.
func (l *loginLimiter) fail(key string, now time.Time) int {
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
	} else {
		l.order.MoveToFront(e)
	}
	f := e.Value.(*failures)
	f.prune(now, l.window)
	// Only the last max failures can ever decide a refusal: keep no more.
	if len(f.times) >= l.max {
		f.times = append(f.times[:0], f.times[len(f.times)-l.max+1:]...)
	}
	f.times = append(f.times, now)
	return len(f.times)
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
// of the connection's remote address, never a header the client writes
// (X-Forwarded-For would let it pick a fresh address for every guess). An
// IPv6 client usually holds a whole /64, so it counts as one.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, err := addr.Prefix(64)
		if err == nil {
			return p.String()
		}
	}
	return addr.String()
}
