// Package clientaddr finds the client of an HTTP request, behind the
// reverse proxies an operator trusts: the HTTP front ends (the dashboard's
// login throttle, and the logs of refused requests) count and name the
// client rather than the proxy in front of it.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Of is the address of the request's client: its peer, or, when the peer
// is a trusted proxy, the client the proxies name in X-Forwarded-For. A
// header is never believed otherwise: X-Forwarded-For would let a client
// pick any address. ok is false when the peer's address does not parse.
func Of(r *http.Request, trusted []netip.Prefix) (addr netip.Addr, ok bool) {
	addr, err := netip.ParseAddr(peerHost(r))
	if err != nil {
		return netip.Addr{}, false
	}
	addr = addr.Unmap()
	if isTrusted(addr, trusted) {
		if client, ok := forwarded(r.Header.Values("X-Forwarded-For"), trusted); ok {
			addr = client
		}
	}
	return addr, true
}

// Name is the request's client for logs: its address as Of finds it, else
// the peer's host as given.
func Name(r *http.Request, trusted []netip.Prefix) string {
	if addr, ok := Of(r, trusted); ok {
		return addr.String()
	}
	return peerHost(r)
}

// HTTPS reports whether the client reached the server through HTTPS: the
// request came over TLS, or its peer is a trusted proxy whose
// X-Forwarded-Proto says https (its first entry, the scheme the proxy
// nearest the client was called with). The header of any other peer is
// never believed.
func HTTPS(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
	}
	peer, err := netip.ParseAddr(peerHost(r))
	if err != nil || !isTrusted(peer.Unmap(), trusted) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// peerHost is the host of the connection's remote address.
func peerHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// forwarded reads X-Forwarded-For from its end, where each trusted proxy
// appended the address it was called from, and returns the first address
// that is not a trusted proxy: the client as the nearest proxy it does not
// control saw it. Anything a client wrote before that is never reached.
// False when the header is missing, unreadable where it is read, or names
// trusted proxies only.
func forwarded(values []string, trusted []netip.Prefix) (netip.Addr, bool) {
	var hops []string
	for _, v := range values {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, false
		}
		if addr = addr.Unmap(); !isTrusted(addr, trusted) {
			return addr, true
		}
	}
	return netip.Addr{}, false
}

// UntrustedForwarder reports whether r came through a reverse proxy not
// among trusted: it names a client in X-Forwarded-For, and its peer, the
// host returned, is no trusted proxy, so every client behind that peer
// has its address.
func UntrustedForwarder(r *http.Request, trusted []netip.Prefix) (peer string, ok bool) {
	if r.Header.Get("X-Forwarded-For") == "" {
		return "", false
	}
	peer = peerHost(r)
	addr, err := netip.ParseAddr(peer)
	if err == nil && isTrusted(addr.Unmap(), trusted) {
		return "", false
	}
	return peer, true
}

func isTrusted(addr netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
