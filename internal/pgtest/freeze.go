package pgtest

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// FreezingProxy is a TCP proxy in front of a test's PostgreSQL that can
// freeze the connections it carries, as a failover behind a load
// balancer, a frozen server or a cut path does: they stay open, with
// neither an error nor a close, and carry nothing more either way.
// Connections made after a freeze carry their bytes as before: the new
// path.
type FreezingProxy struct {
	ln      net.Listener
	network string
	address string
	url     string

	mu     sync.Mutex
	conns  []*proxied
	closed bool
	// marker, when set, freezes the proxy once a client sends it
	// (FreezeWhenSent).
	marker []byte
	// delayMarker, when set, holds the first bytes a client sends that
	// hold it for delay (DelayWhenSent).
	delayMarker []byte
	delay       time.Duration
	// holdMarker, when set, holds the first bytes a client sends that
	// hold it until release is closed (HoldWhenSent); held is closed once
	// they are held.
	holdMarker   []byte
	held, unheld chan struct{}
	// replyMarker, when set, holds the first bytes the server sends that
	// hold it until their release (HoldWhenReceived); replyHeld is
	// closed once they are held.
	replyMarker            []byte
	replyHeld, replyUnheld chan struct{}
	// cutMarker, when set, closes the client's side of the first
	// connection whose client sends it, once the bytes are forwarded
	// (CutWhenSent).
	cutMarker []byte
}

// proxied is one client connection and its server connection.
type proxied struct {
	p              *FreezingProxy
	client, server net.Conn
	// mu is held across each forward and by Freeze, so that nothing read
	// before a freeze is forwarded after it.
	mu     sync.Mutex
	frozen bool
}

// forward writes p to dst unless the connection is frozen, and reports
// whether it is frozen.
func (c *proxied) forward(dst net.Conn, p []byte) (frozen bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return true, nil
	}
	_, err = dst.Write(p)
	return false, err
}

func (c *proxied) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
}

// NewFreezingProxy starts a proxy to the server of dbURL, closed with
// every connection it carries at the end of the test.
func NewFreezingProxy(tb testing.TB, dbURL string) *FreezingProxy {
	tb.Helper()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: parse the database URL: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &FreezingProxy{ln: ln}
	p.network, p.address = pgconn.NetworkAddress(cfg.Host, cfg.Port)
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p.url = editConnString(tb, dbURL, "host="+host+" port="+port, func(u *url.URL) {
		q := u.Query()
		q.Del("host")
		q.Del("port")
		u.RawQuery = q.Encode()
		u.Host = ln.Addr().String()
	})
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// URL is the database URL through the proxy.
func (p *FreezingProxy) URL() string { return p.url }

// Freeze stops every connection open now from carrying bytes, leaving it
// open; connections made later are carried.
func (p *FreezingProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.freeze()
	}
}

// FreezeWhenSent has the proxy Freeze once a client sends bytes that
// hold marker, before they reach the server: a call frozen midway in a
// process the test cannot pause, such as a command, once it has
// connected. It freezes once.
func (p *FreezingProxy) FreezeWhenSent(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = []byte(marker)
}

// sent reports whether b, sent by a client, holds the marker to freeze
// on, and forgets the marker when it does.
func (p *FreezingProxy) sent(b []byte) bool { return p.take(&p.marker, b) }

// take reports whether b holds *marker, and forgets it when it does.
func (p *FreezingProxy) take(marker *[]byte, b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(*marker) == 0 || !bytes.Contains(b, *marker) {
		return false
	}
	*marker = nil
	return true
}

// DelayWhenSent has the proxy hold the first bytes a client sends that
// hold marker for d before they reach the server, as a busy machine holds
// a client between its connect and its first statement. It delays once.
func (p *FreezingProxy) DelayWhenSent(marker string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delayMarker, p.delay = []byte(marker), d
}

// delayFor returns how long to hold b, sent by a client: the delay asked
// for if b holds its marker, which it then forgets, or else 0.
func (p *FreezingProxy) delayFor(b []byte) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.delayMarker) == 0 || !bytes.Contains(b, p.delayMarker) {
		return 0
	}
	p.delayMarker = nil
	return p.delay
}

// HoldWhenSent has the proxy hold the first bytes a client sends that
// hold marker, before they reach the server, until release is called: a
// statement on its way while the client gives up on it, as a cancel does.
// held is closed once they are held. It holds once.
func (p *FreezingProxy) HoldWhenSent(marker string) (held <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdMarker, p.held, p.unheld = []byte(marker), make(chan struct{}), make(chan struct{})
	var once sync.Once
	unheld := p.unheld
	return p.held, func() { once.Do(func() { close(unheld) }) }
}

// holdFor returns what to wait on before b, sent by a client, goes on:
// the release of HoldWhenSent if b holds its marker, which it then
// forgets, or else nil.
func (p *FreezingProxy) holdFor(b []byte) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.holdMarker) == 0 || !bytes.Contains(b, p.holdMarker) {
		return nil
	}
	p.holdMarker = nil
	close(p.held)
	return p.unheld
}

// HoldWhenReceived has the proxy hold the first bytes the server sends
// that hold marker, before they reach the client, until release is
// called: an answer the server gave, late on its way back, as a busy
// client or a slow path makes it. held is closed once they are held. It
// holds once.
func (p *FreezingProxy) HoldWhenReceived(marker string) (held <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replyMarker, p.replyHeld, p.replyUnheld = []byte(marker), make(chan struct{}), make(chan struct{})
	var once sync.Once
	unheld := p.replyUnheld
	return p.replyHeld, func() { once.Do(func() { close(unheld) }) }
}

// replyHoldFor returns what to wait on before b, sent by the server, goes
// on: the release of HoldWhenReceived if b holds its marker, which it then
// forgets, or else nil.
func (p *FreezingProxy) replyHoldFor(b []byte) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.replyMarker) == 0 || !bytes.Contains(b, p.replyMarker) {
		return nil
	}
	p.replyMarker = nil
	close(p.replyHeld)
	return p.replyUnheld
}

// CutWhenSent has the proxy close the client's side of the connection
// whose client first sends bytes that hold marker, right after they reach
// the server: a connection that broke as a statement left, whose client
// cannot know whether it committed. The server's side stays open, so that
// the server runs what it got to its end, a commit included, as it does
// when the break is on the client's side of the path. It cuts once.
func (p *FreezingProxy) CutWhenSent(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutMarker = []byte(marker)
}

// cutAfter reports whether b, sent by a client, holds the marker to cut
// on, and forgets the marker when it does.
func (p *FreezingProxy) cutAfter(b []byte) bool { return p.take(&p.cutMarker, b) }

func (p *FreezingProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial(p.network, p.address)
		if err != nil {
			_ = client.Close()
			continue
		}
		c := &proxied{p: p, client: client, server: server}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go c.carry(server, client)
		go c.carry(client, server)
	}
}

// carry copies from src to dst until either closes; once frozen, what it
// reads goes nowhere, as on a path that drops everything (reading on
// keeps the sender from blocking, which a dropped path does not do
// either).
func (c *proxied) carry(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if dst == c.server && c.p.sent(buf[:n]) {
			c.p.Freeze()
		}
		if dst == c.server {
			time.Sleep(c.p.delayFor(buf[:n]))
			if unheld := c.p.holdFor(buf[:n]); unheld != nil {
				<-unheld
			}
		} else if unheld := c.p.replyHoldFor(buf[:n]); unheld != nil {
			<-unheld
		}
		cut := dst == c.server && c.p.cutAfter(buf[:n])
		frozen, werr := c.forward(dst, buf[:n])
		if werr != nil {
			return
		}
		if cut {
			_ = c.client.Close()
			return
		}
		if err != nil {
			if !frozen { // a frozen path tells no close either
				_ = dst.Close()
			}
			return
		}
	}
}

func (p *FreezingProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.client.Close()
		_ = c.server.Close()
	}
}

// FillPool has pool open n connections, each used once and left idle: a
// freeze then holds them all, as a path that froze holds every connection
// of a pool that was busy a moment before.
func FillPool(tb testing.TB, pool *pgxpool.Pool, n int) {
	tb.Helper()
	ctx := Context(tb)
	conns := make([]*pgxpool.Conn, 0, n)
	for range n {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		conn.Release()
	}
	if got := pool.Stat().TotalConns(); got != int32(n) {
		tb.Fatalf("the pool holds %d connections, want %d", got, n)
	}
}
