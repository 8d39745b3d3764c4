package throttle

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The limiter refuses a client once its failures fill the window, lets
// it try again once the oldest failure left the window, does not count a
// success, and keeps each client apart.
func TestLoginLimiterWindow(t *testing.T) {
	l := New(3, time.Minute, 100)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// A success is given back: it leaves the client untracked.
	_, _, ok := l.Take("a", t0)
	l.Refund("a", t0)
	if !ok || l.Tracked() != 0 {
		t.Fatalf("a success: allowed %v, %d clients tracked, want allowed and none", ok, l.Tracked())
	}
	for i := range 3 {
		if n, wait, ok := l.Take("a", t0.Add(time.Duration(i)*time.Second)); !ok || n != i+1 {
			t.Fatalf("attempt %d: allowed %v with %d failures (refused for %s)", i+1, ok, n, wait)
		}
	}
	n, wait, ok := l.Take("a", t0.Add(10*time.Second))
	if ok || wait != 50*time.Second || n != 3 {
		t.Fatalf("after 3 failures: allowed %v, %d failures, wait %s; want refused for 50s (the first failure leaves the window at 1 min)", ok, n, wait)
	}
	if _, _, ok := l.Take("b", t0.Add(10*time.Second)); !ok {
		t.Fatal("another client is refused for a's failures")
	}
	// The refused attempt was not counted: once the first failure left
	// the window, one more attempt is allowed, and it fills the window
	// again.
	if n, _, ok := l.Take("a", t0.Add(time.Minute)); !ok || n != 3 {
		t.Fatalf("once the first failure left the window: allowed %v with %d failures, want allowed with 3", ok, n)
	}
	if _, wait, ok := l.Take("a", t0.Add(time.Minute)); ok || wait != time.Second {
		t.Fatalf("a failure that fills the window again: allowed %v, wait %s; want refused for 1s", ok, wait)
	}
	// Long after, nothing counts any more.
	if n, _, ok := l.Take("a", t0.Add(time.Hour)); !ok || n != 1 {
		t.Fatalf("an hour later: allowed %v with %d failures, want allowed with 1", ok, n)
	}
}

// Guesses sent at once get no more tries than guesses sent one by one:
// each is counted before its token is compared.
func TestLoginLimiterConcurrent(t *testing.T) {
	l := New(5, time.Minute, 100)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, _, ok := l.Take("a", now); ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 5 {
		t.Fatalf("%d of 50 simultaneous guesses were allowed, want 5", n)
	}
}

// A flood of distinct addresses does not grow the table beyond its cap:
// the clients that tried longest ago are forgotten first, and the latest
// stay tracked.
func TestLoginLimiterCap(t *testing.T) {
	l := New(2, time.Minute, 50)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l.Take("kept", now)
	l.Take("kept", now)
	for i := range 1000 {
		l.Take(fmt.Sprintf("10.0.%d.%d", i/256, i%256), now)
		if i%40 == 0 {
			// kept keeps trying (refused): it stays among the latest, and
			// refused.
			if _, _, ok := l.Take("kept", now); ok {
				t.Fatalf("kept is allowed after %d other addresses: a refused client was forgotten", i+1)
			}
		}
		if n := l.Tracked(); n > 50 {
			t.Fatalf("%d clients tracked after %d addresses, the cap is 50", n, i+2)
		}
	}
	if n := l.Tracked(); n != 50 {
		t.Fatalf("%d clients tracked, want the cap, 50", n)
	}
	// 10.0.3.231 is the 1000th address: the latest is tracked, and a
	// second failure fills its window.
	if _, ok := l.clients["10.0.3.231"]; !ok {
		t.Fatal("the latest address is not tracked")
	}
	l.Take("10.0.3.231", now)
	if _, _, ok := l.Take("10.0.3.231", now); ok {
		t.Fatal("the latest address is not refused after its second failure")
	}
	for i := range 60 {
		l.Take(fmt.Sprintf("10.1.0.%d", i), now)
	}
	if _, ok := l.clients["kept"]; ok {
		t.Fatal("a client that tried 60 addresses ago is still tracked past the cap of 50")
	}
	if _, ok := l.clients["10.0.0.0"]; ok {
		t.Fatal("the first address of the flood is still tracked")
	}
}

// Behind trusted proxies a client is the last address of X-Forwarded-For
// that is not a proxy: what it wrote itself before that, a header that
// does not parse, or a request from an untrusted address change nothing.
func TestClientKeyBehindTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"10.0.0.5:443", []string{"198.51.100.7"}, "198.51.100.7"},
		{"10.0.0.5:443", []string{"203.0.113.66, 198.51.100.7"}, "198.51.100.7"},               // a client's own entry is never reached
		{"10.0.0.5:443", []string{"203.0.113.66, 198.51.100.7, 10.1.2.3"}, "198.51.100.7"},     // two proxies
		{"10.0.0.5:443", []string{"203.0.113.66", "198.51.100.7", "10.1.2.3"}, "198.51.100.7"}, // one header per proxy
		{"[fd00::5]:443", []string{"2001:db8:7:7::1"}, "2001:db8:7:7::/64"},                    // by its /64
		{"10.0.0.5:443", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},                      // IPv4-mapped
		{"10.0.0.5:443", nil, "10.0.0.5"},                                                      // no header: the proxy
		{"10.0.0.5:443", []string{"10.9.9.9"}, "10.0.0.5"},                                     // proxies only
		{"10.0.0.5:443", []string{"198.51.100.7, unknown"}, "10.0.0.5"},                        // unreadable where read
		{"10.0.0.5:443", []string{"198.51.100.7; DROP TABLE x"}, "10.0.0.5"},                   // not an address
		{"192.0.2.7:51234", []string{"198.51.100.1"}, "192.0.2.7"},                             // not from a proxy
	} {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if k := ClientKey(r, trusted); k != c.want {
			t.Errorf("from %s with X-Forwarded-For %q: client %q, want %q", c.remote, c.xff, k, c.want)
		}
	}
}

// A client is its connection's address: a header it writes does not make
// it another, and an IPv6 client counts by its /64.
func TestClientKey(t *testing.T) {
	r := httptest.NewRequest("POST", "/login", nil)
	r.RemoteAddr = "192.0.2.7:51234"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	r.Header.Set("X-Real-Ip", "198.51.100.2")
	if k := ClientKey(r, nil); k != "192.0.2.7" {
		t.Fatalf("client key %q, want the remote address 192.0.2.7", k)
	}
	r.RemoteAddr = "[2001:db8:1:2:aaaa::1]:443"
	a := ClientKey(r, nil)
	r.RemoteAddr = "[2001:db8:1:2:bbbb::9]:443"
	if b := ClientKey(r, nil); a != b || a != "2001:db8:1:2::/64" {
		t.Fatalf("two addresses of one /64 are %q and %q, want both 2001:db8:1:2::/64", a, b)
	}
	r.RemoteAddr = "[::ffff:192.0.2.7]:80"
	if k := ClientKey(r, nil); k != "192.0.2.7" {
		t.Fatalf("an IPv4-mapped address is %q, want 192.0.2.7", k)
	}
}
