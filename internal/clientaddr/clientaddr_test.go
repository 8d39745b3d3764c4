package clientaddr_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/pgbus/pgbus/internal/clientaddr"
)

// Name names the client as Of finds it, its whole address, and falls back
// to the peer as given when that is no address.
func TestName(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct{ remote, xff, want string }{
		{"10.0.0.5:443", "2001:db8:7:7::1", "2001:db8:7:7::1"},
		{"10.0.0.5:443", "", "10.0.0.5"},
		{"192.0.2.7:1", "198.51.100.1", "192.0.2.7"},
		{"@unix", "198.51.100.1", "@unix"},
		{"[::ffff:192.0.2.8]:1", "", "192.0.2.8"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := clientaddr.Name(r, trusted); got != c.want {
			t.Errorf("from %s with X-Forwarded-For %q: %q, want %q", c.remote, c.xff, got, c.want)
		}
		if _, ok := clientaddr.Of(r, trusted); ok == (c.remote == "@unix") {
			t.Errorf("from %s: Of ok = %v", c.remote, ok)
		}
	}
}
