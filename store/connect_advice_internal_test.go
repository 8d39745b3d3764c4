package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// PgBouncer refuses clients for a while after its own login to PostgreSQL
// failed (server_login_retry), as during a restart of PostgreSQL: the
// advice is to try again shortly, where it was to check the database URL. Other
// protocol errors keep the general advice.
func TestConnectAdviceOfAPoolerRetryingItsLogin(t *testing.T) {
	t.Parallel()
	retry := &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "server login has been failing, try again later (server_login_retry)"}
	if got := connectAdvice(retry); !strings.Contains(got, "try again shortly") || strings.Contains(got, "check the database URL") {
		t.Errorf("advice for PgBouncer's server_login_retry: %q", got)
	}
	other := &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "unsupported startup parameter: foo"}
	if got := connectAdvice(other); !strings.Contains(got, "check the database URL") {
		t.Errorf("advice for another protocol error: %q", got)
	}
}

// A connection whose first statements a role's setting cut (a
// statement_timeout of 1ms, an idle_in_transaction_session_timeout as
// short) names the setting to raise, where it said to check the database URL.
func TestConnectAdviceOfARoleSettingTooShort(t *testing.T) {
	t.Parallel()
	for code, setting := range map[string]string{"57014": "statement_timeout", "25P03": "idle_in_transaction_session_timeout", "55P03": "lock_timeout"} {
		err := &pgconn.PgError{Severity: "ERROR", Code: code, Message: "canceling statement due to statement timeout"}
		if got := connectAdvice(err); !strings.Contains(got, "its "+setting) || !strings.Contains(got, "ALTER ROLE <role> SET "+setting) || strings.Contains(got, "check the database URL") {
			t.Errorf("advice for SQLSTATE %s: %q; want %s named, with the statement that raises it", code, got, setting)
		}
	}
}

// pgxpool gives up acquiring a connection, blaming a bug of its hooks,
// when every connection it tries fails its check: the mark of a server,
// or PgBouncer in front of one, that takes connections and answers none.
// The store says so, and counts it as a database that cannot be reached.
func TestPoolGivingUpIsUnreachable(t *testing.T) {
	t.Parallel()
	raw := errors.New("pgxpool: too many failed attempts acquiring connection; likely bug in PrepareConn, BeforeAcquire, or ShouldPing hook")
	err := poolerHint(fmt.Errorf("store: list queues: %w", raw), nil)
	if !IsUnreachable(err) || strings.Contains(err.Error(), "likely bug") || !strings.Contains(err.Error(), "PgBouncer cannot reach PostgreSQL") {
		t.Errorf("the pool's giving up reads %q (unreachable: %v); want it unreachable, saying PgBouncer cannot reach PostgreSQL", err, IsUnreachable(err))
	}
	if got := connectAdvice(raw); strings.Contains(got, "host and port") {
		t.Errorf("advice for the pool's giving up: %q", got)
	}
	if !errors.Is(err, raw) {
		t.Error("the pool's error is no longer wrapped")
	}
}

// A server (PgBouncer killed, restarting) that takes the connection and
// drops it as the client asks for TLS, under sslmode=prefer, then refuses
// the try without TLS: the advice is to check that the server runs, where
// it was to check the server's certificate, which had nothing to do with it.
func TestConnectAdviceOfAConnectionCutAtTLS(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	go func() {
		c, err := ln.Accept()
		_ = ln.Close() // the try without TLS is refused
		if err != nil {
			return
		}
		_, _ = io.ReadFull(c, make([]byte, 8)) // the SSLRequest
		_ = c.(*net.TCPConn).SetLinger(0)      // a reset, as a process killed
		_ = c.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pgconn.Connect(ctx, fmt.Sprintf("postgres://u@127.0.0.1:%d/db?sslmode=prefer&connect_timeout=10", addr.Port))
	if err == nil {
		t.Fatal("connected to a server that dropped the connection")
	}
	if !strings.Contains(err.Error(), "tls error") {
		t.Fatalf("the connection's error does not come from the TLS request: %v", err)
	}
	if got := connectAdvice(err); strings.Contains(got, "certificate") || !strings.Contains(got, "check that the server is running") {
		t.Errorf("advice for a connection cut as it asked for TLS (%v): %q; want to check that the server runs", err, got)
	}
}

// A server that takes the connection and does not answer the client's
// TLS request within connect_timeout (overloaded, or frozen) is told as
// one that did not answer in time, as it is when it does not answer the
// login: the advice was to check the server's certificate, which had
// nothing to do with it.
func TestConnectAdviceOfATLSRequestUnanswered(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	addr := ln.Addr().(*net.TCPAddr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // read nothing, answer nothing
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = pgconn.Connect(ctx, fmt.Sprintf("postgres://u@127.0.0.1:%d/db?sslmode=prefer&connect_timeout=1", addr.Port))
	if err == nil {
		t.Fatal("connected to a server that does not answer")
	}
	if !strings.Contains(err.Error(), "tls error") || !pgconn.Timeout(err) {
		t.Fatalf("the connection's error is not the TLS request's timeout: %v", err)
	}
	if got := connectAdvice(err); strings.Contains(got, "certificate") || !strings.Contains(got, "did not answer in time") || !strings.Contains(got, "host and port") {
		t.Errorf("advice for a TLS request unanswered (%v): %q; want that the server did not answer in time", err, got)
	}
}
