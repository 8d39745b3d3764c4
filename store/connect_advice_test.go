package store_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestOpenSaysWhyItCouldNotConnect: a server that refuses a connection
// says why, and Open's advice follows the reason instead of asking
// whether the server runs: a full connection limit names the pool size
// and PgBouncer, a missing database says to create it, an unknown role
// names the user and password; a server that does not answer is the one
// case where the advice is to check that it runs, its refusal said once.
// The URL is the caller's, given to Open: the advice calls it the database
// URL, not the command line's DATABASE_URL, which a Go program never set.
func TestOpenSaysWhyItCouldNotConnect(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	base := pgtest.NewDatabase(t)
	role, full := pgtest.NewRole(t, base)
	pgtest.Exec(t, base, "ALTER ROLE "+role+" CONNECTION LIMIT 0")
	closed := pgtest.RefusingPort(t).Addr()
	for _, c := range []struct {
		name, url, want, not string
	}{
		{"connection limit", full, "pool_max_conns", "check that the server is running"},
		{"missing database", edit(t, base, "dbname", "pgbus_no_such_db"), "the database named in the database URL does not exist: create it", "check that the server is running"},
		{"unknown role", edit(t, base, "user", "pgbus_no_such_role"), "check the user and password in the database URL", "check that the server is running"},
		{"no server", edit(t, base, "addr", closed), "check that the server is running and the database URL's host and port are right", "pool_max_conns"},
		{"no server, TLS or not", edit(t, edit(t, base, "addr", closed), "sslmode", "prefer"), "check that the server is running", "pool_max_conns"},
	} {
		s, err := store.Open(ctx, c.url)
		if err == nil {
			s.Close()
			t.Fatalf("%s: Open succeeded; want a refusal", c.name)
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, c.not) || strings.Contains(msg, "DATABASE_URL") {
			t.Errorf("%s: %v; want advice with %q and without %q", c.name, err, c.want, c.not)
		}
		// pgx tries twice (with TLS, then without) and lists each try: the
		// same failure is said once.
		if strings.HasPrefix(c.name, "no server") && strings.Count(msg, "connection refused") != 1 {
			t.Errorf("%s: the refusal is said %d times, want once:\n%s", c.name, strings.Count(msg, "connection refused"), msg)
		}
		if strings.HasPrefix(c.name, "no server") && !store.IsUnreachable(err) {
			t.Errorf("%s: %v is not taken for an unreachable server", c.name, err)
		}
	}
}

// edit returns dbURL with one connection parameter set, in either form a
// connection string takes.
func edit(t *testing.T, dbURL, key, value string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(value)
	if !strings.Contains(dbURL, "://") {
		if key == "addr" {
			return dbURL + " host=" + host + " port=" + port
		}
		return dbURL + " " + key + "=" + value
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	switch key {
	case "sslmode":
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
	case "dbname":
		u.Path = "/" + value
	case "user":
		u.User = url.User(value)
	default:
		q := u.Query()
		q.Set("host", host)
		q.Set("port", port)
		u.RawQuery = q.Encode()
		u.Host = value
	}
	return u.String()
}

// A store used after Close says it was closed and what to do, on a read, a
// write and a transaction: the pool's own "closed pool" named neither.
func TestClosedStoreSaysSo(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, err := store.Open(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	q := pgtest.Name("closed")
	for what, call := range map[string]func() error{
		"read":        func() error { _, err := s.PhysicalQueues(ctx, q); return err },
		"write":       func() error { _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`1`)}); return err },
		"transaction": func() error { _, err := s.CheckSchema(ctx); return err },
	} {
		// Once: a transaction's begin meets the closed pool twice.
		if err := call(); err == nil || strings.Count(err.Error(), "this Store was closed (Store.Close): open one with store.Open") != 1 {
			t.Errorf("%s on a closed store: %v; want it to say once that the store was closed and to open one", what, err)
		} else if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s on a closed store: %v is not store.ErrClosed", what, err)
		}
	}
	select {
	case <-s.Closed():
	default:
		t.Error("Closed() is not closed after Close")
	}
}

// A server that refuses TLS where the database URL's sslmode requires it
// is told apart from one that does not run: the advice names sslmode and
// enabling TLS on the server. It said to check that the server runs.
func TestOpenSaysTheServerRefusedTLS(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// The SSLRequest, 8 bytes, answered as a server without TLS does.
			buf := make([]byte, 8)
			if _, err := io.ReadFull(conn, buf); err == nil {
				_, _ = conn.Write([]byte("N"))
			}
			conn.Close()
		}
	}()
	s, err := store.Open(testContext(t), "postgres://app@"+ln.Addr().String()+"/app?sslmode=require&connect_timeout=5")
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded; want the TLS refusal")
	}
	msg := err.Error()
	if !strings.Contains(msg, "server refused TLS connection") || !strings.Contains(msg, "sslmode") || !strings.Contains(msg, "enable TLS on the server") || strings.Contains(msg, "check that the server is running") {
		t.Errorf("%v\nwant advice naming sslmode and TLS on the server, not to check that the server runs", err)
	}
}
