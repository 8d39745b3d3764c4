package pgtest

import (
	"net"
	"strconv"
	"testing"
)

// Port is a loopback TCP port that refuses connections and that no other
// socket can take until the test ends: a port found free and released at
// once may be taken, meanwhile, by another test listening on port 0, and a
// connection meant to be refused then reaches that test's server.
type Port struct {
	tb   testing.TB
	port int
	h    portHold
}

// RefusingPort holds a loopback port that refuses connections until the
// test ends or until Listen.
func RefusingPort(tb testing.TB) *Port {
	tb.Helper()
	p := &Port{tb: tb}
	var err error
	if p.port, err = p.h.hold(); err != nil {
		tb.Fatalf("hold a loopback port: %v", err)
	}
	tb.Cleanup(p.h.release)
	return p
}

// Addr is the port's address, 127.0.0.1:port.
func (p *Port) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Number is the port's number.
func (p *Port) Number() int { return p.port }

// Listen makes the port listen, from now on, and returns its listener,
// closed when the test ends.
func (p *Port) Listen() net.Listener {
	p.tb.Helper()
	ln, err := p.h.listen()
	if err != nil {
		p.tb.Fatalf("listen on %s: %v", p.Addr(), err)
	}
	p.tb.Cleanup(func() { _ = ln.Close() })
	return ln
}
