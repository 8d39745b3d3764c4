package pgtest_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A held port refuses connections, and no listener can take it, until the
// test makes it listen: then it accepts them.
func TestRefusingPortIsRefusedAndKept(t *testing.T) {
	t.Parallel()
	p := pgtest.RefusingPort(t)
	if _, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s, held: %v; want the connection refused", p.Addr(), err)
	}
	if ln, err := net.Listen("tcp", p.Addr()); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s while it was held", p.Addr())
	}
	ln := p.Listen()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s once it listens: %v", p.Addr(), err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("accept on %s: %v", p.Addr(), err)
	}
}
