package dashboard

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

// The limiter refuses a client after its failures fill the window, lets
// it try again once the oldest failure left the window, and keeps each
// client apart.
func TestLoginLimiterWindow(t *testing.T) {
	l := newLoginLimiter(3, time.Minute, 100)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		if wait, blocked := l.blocked("a", t0); blocked {
			t.Fatalf("refused after %d failures, for %s", i, wait)
		}
		l.fail("a", t0.Add(time.Duration(i)*time.Second))
	}
	wait, blocked := l.blocked("a", t0.Add(10*time.Second))
	if !blocked || wait != 50*time.Second {
		t.Fatalf("after 3 failures: blocked %v for %s, want 50s (the first failure leaves the window at 1 min)", blocked, wait)
	}
	if _, blocked := l.blocked("b", t0.Add(10*time.Second)); blocked {
		t.Fatal("another client is refused for a's failures")
	}
	if _, blocked := l.blocked("a", t0.Add(time.Minute)); blocked {
		t.Fatal("still refused once the first failure left the window")
	}
	// One more failure fills the window again.
	if n := l.fail("a", t0.Add(time.Minute)); n != 3 {
		t.Fatalf("%d failures count, want 3 (two of the first and this one)", n)
	}
	if _, blocked := l.blocked("a", t0.Add(time.Minute)); !blocked {
		t.Fatal("a failure that fills the window again is not refused")
	}
	// Long after, the client is forgotten.
	if _, blocked := l.blocked("a", t0.Add(time.Hour)); blocked || l.tracked() != 0 {
		t.Fatalf("an hour later: blocked %v, %d clients tracked, want none", blocked, l.tracked())
	}
}

// A flood of distinct addresses does not grow the table beyond its cap:
// the clients that failed longest ago are forgotten first, and the latest
// stay refused.
func TestLoginLimiterCap(t *testing.T) {
	l := newLoginLimiter(2, time.Minute, 50)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l.fail("kept", now)
	l.fail("kept", now)
	for i := range 1000 {
		l.fail(fmt.Sprintf("10.0.%d.%d", i/256, i%256), now)
		if i == 500 {
			// kept fails again: it is among the latest again.
			l.fail("kept", now)
		}
		if n := l.tracked(); n > 50 {
			t.Fatalf("%d clients tracked after %d addresses, the cap is 50", n, i+2)
		}
	}
	if n := l.tracked(); n != 50 {
		t.Fatalf("%d clients tracked, want the cap, 50", n)
	}
	// 10.0.3.231 is the 1000th address: the latest is tracked, and a
	// second failure refuses it.
	if _, ok := l.clients["10.0.3.231"]; !ok {
		t.Fatal("the latest address is not tracked")
	}
	l.fail("10.0.3.231", now)
	if _, blocked := l.blocked("10.0.3.231", now); !blocked {
		t.Fatal("the latest address is not refused after its second failure")
	}
	if _, ok := l.clients["kept"]; ok {
		t.Fatal("a client that failed 499 addresses ago is still tracked past the cap of 50")
	}
	if _, ok := l.clients["10.0.0.0"]; ok {
		t.Fatal("the first address of the flood is still tracked")
	}
}

// A client is its connection's address: a header it writes does not make
// it another, and an IPv6 client counts by its /64.
func TestClientKey(t *testing.T) {
	r := httptest.NewRequest("POST", "/login", nil)
	r.RemoteAddr = "192.0.2.7:51234"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	r.Header.Set("X-Real-Ip", "198.51.100.2")
	if k := clientKey(r); k != "192.0.2.7" {
		t.Fatalf("client key %q, want the remote address 192.0.2.7", k)
	}
	r.RemoteAddr = "[2001:db8:1:2:aaaa::1]:443"
	a := clientKey(r)
	r.RemoteAddr = "[2001:db8:1:2:bbbb::9]:443"
	if b := clientKey(r); a != b || a != "2001:db8:1:2::/64" {
		t.Fatalf("two addresses of one /64 are %q and %q, want both 2001:db8:1:2::/64", a, b)
	}
	r.RemoteAddr = "[::ffff:192.0.2.7]:80"
	if k := clientKey(r); k != "192.0.2.7" {
		t.Fatalf("an IPv4-mapped address is %q, want 192.0.2.7", k)
	}
}
