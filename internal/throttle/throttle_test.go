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

// at is a clock that always says t.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func wrong() bool { return false }
func right() bool { return true }

// The limiter refuses a client once its failures fill the window, lets
// it try again once the oldest failure left the window, does not count a
// success, and keeps each client apart.
func TestLimiterWindow(t *testing.T) {
	l := New(3, time.Minute, 100)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// A success leaves the client untracked.
	if ok, _, _ := l.Attempt("a", at(t0), right); !ok || l.Tracked() != 0 {
		t.Fatalf("a success: ok %v, %d clients tracked, want ok and none", ok, l.Tracked())
	}
	for i := range 3 {
		if ok, n, wait := l.Attempt("a", at(t0.Add(time.Duration(i)*time.Second)), wrong); ok || wait != 0 || n != i+1 {
			t.Fatalf("wrong attempt %d: ok %v, %d failures, wait %s; want compared and counted", i+1, ok, n, wait)
		}
	}
	ok, n, wait := l.Attempt("a", at(t0.Add(10*time.Second)), right)
	if ok || wait != 50*time.Second || n != 3 {
		t.Fatalf("after 3 failures: ok %v, %d failures, wait %s; want refused for 50s (the first failure leaves the window at 1 min)", ok, n, wait)
	}
	if ok, _, _ := l.Attempt("b", at(t0.Add(10*time.Second)), right); !ok {
		t.Fatal("another client is refused for a's failures")
	}
	// The refused attempt was not counted: once the first failure left
	// the window, one more attempt is compared, and a wrong one fills the
	// window again.
	if ok, n, wait := l.Attempt("a", at(t0.Add(time.Minute)), wrong); ok || wait != 0 || n != 3 {
		t.Fatalf("once the first failure left the window: ok %v, %d failures, wait %s; want compared with 3", ok, n, wait)
	}
	if _, _, wait := l.Attempt("a", at(t0.Add(time.Minute)), right); wait != time.Second {
		t.Fatalf("a failure that fills the window again: wait %s; want refused for 1s", wait)
	}
	// Long after, nothing counts any more.
	if ok, _, _ := l.Attempt("a", at(t0.Add(time.Hour)), right); !ok {
		t.Fatal("an hour later the right secret is refused")
	}
}

// Attempt decides attempts one at a time: of many wrong ones sent at once
// only max are compared, and right ones sent at once with them are never
// refused as long as the wrong ones leave room; once the window is full,
// nothing is compared until it has room again.
func TestAttemptsAtOnce(t *testing.T) {
	l := New(5, time.Minute, 100)
	var compared, refused atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			ok, _, wait := l.Attempt("guesser", time.Now, func() bool { compared.Add(1); return false })
			if !ok && wait > 0 {
				refused.Add(1)
			}
		})
	}
	for range 500 {
		wg.Go(func() {
			if ok, _, wait := l.Attempt("client", time.Now, right); !ok {
				t.Errorf("a right attempt was refused (wait %s)", wait)
			}
		})
	}
	wg.Wait()
	if compared.Load() != 5 || refused.Load() != 45 {
		t.Fatalf("%d of 50 wrong attempts compared, %d refused; want 5 and 45", compared.Load(), refused.Load())
	}
	if l.Tracked() != 1 {
		t.Fatalf("%d clients tracked; want the guesser alone (right attempts leave no trace)", l.Tracked())
	}
	called := false
	ok, n, wait := l.Attempt("guesser", time.Now, func() bool { called = true; return true })
	if ok || called || n != 5 || wait <= 0 || wait > time.Minute {
		t.Fatalf("the right secret from a client whose window is full: ok %v, compared %v, %d failures, wait %s; want refused uncompared within a minute", ok, called, n, wait)
	}
}

// A flood of distinct addresses does not grow the table beyond its cap:
// the clients that tried longest ago are forgotten first, and the latest
// stay tracked.
func TestLimiterCap(t *testing.T) {
	l := New(2, time.Minute, 50)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l.Attempt("kept", at(now), wrong)
	l.Attempt("kept", at(now), wrong)
	for i := range 1000 {
		l.Attempt(fmt.Sprintf("10.0.%d.%d", i/256, i%256), at(now), wrong)
		if i%40 == 0 {
			// kept keeps trying (refused): it stays among the latest, and
			// refused.
			if ok, _, wait := l.Attempt("kept", at(now), right); ok || wait == 0 {
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
	l.Attempt("10.0.3.231", at(now), wrong)
	if _, _, wait := l.Attempt("10.0.3.231", at(now), right); wait == 0 {
		t.Fatal("the latest address is not refused after its second failure")
	}
	for i := range 60 {
		l.Attempt(fmt.Sprintf("10.1.0.%d", i), at(now), wrong)
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
