package dbopen_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/internal/pgtest"
)

const waitLine = "PostgreSQL is not reachable yet"

// A worker started before its database waits for it: Connect keeps trying
// while nothing listens at the URL, and connects once the server is there.
func TestConnectWaitsForTheServer(t *testing.T) {
	ctx := pgtest.Context(t)
	target := pgtest.NewDatabase(t)
	port := pgtest.RefusingPort(t)
	addr := port.Addr()
	var logs pgtest.SyncBuffer
	type result struct {
		db  *dbopen.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, err := dbopen.Connect(ctx, dbopen.Options{URL: throughAddr(t, target, addr), WaitFor: 5 * time.Minute,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		done <- result{db, err}
	}()
	pgtest.Eventually(t, time.Minute, "Connect to say it waits", func() bool { return strings.Contains(logs.String(), waitLine) })
	proxy(t, port.Listen(), target)
	r := <-done
	if r.err != nil {
		t.Fatalf("Connect after the server came up: %v\nlog:\n%s", r.err, logs.String())
	}
	defer r.db.Close()
	var one int
	if err := r.db.Pool().QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through the waited-for connection: %d, %v", one, err)
	}
}

// Without WaitFor, or when the server answers but refuses (here: a
// database that does not exist), Connect fails at once, with no wait.
func TestConnectDoesNotWaitForWhatWaitingCannotCure(t *testing.T) {
	ctx := pgtest.Context(t)
	target := pgtest.NewDatabase(t)
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	_, err := dbopen.Connect(ctx, dbopen.Options{URL: throughAddr(t, target, pgtest.RefusingPort(t).Addr()), Logger: log})
	if err == nil || !strings.Contains(err.Error(), "check that the server is running") {
		t.Fatalf("unreachable server without WaitFor: %v", err)
	}
	port := pgtest.RefusingPort(t)
	addr := port.Addr()
	proxy(t, port.Listen(), target)
	cfg, perr := pgx.ParseConfig(throughAddr(t, target, addr))
	if perr != nil {
		t.Fatal(perr)
	}
	missing := fmt.Sprintf("postgres://%s@%s/no_such_database_here?sslmode=disable", cfg.User, addr)
	_, err = dbopen.Connect(ctx, dbopen.Options{URL: missing, WaitFor: 5 * time.Minute, Logger: log})
	if err == nil || !strings.Contains(err.Error(), "no_such_database_here") {
		t.Fatalf("missing database: %v", err)
	}
	if strings.Contains(logs.String(), waitLine) {
		t.Errorf("Connect waited for what waiting cannot cure:\n%s", logs.String())
	}
}

// throughAddr is target's URL with its host and port replaced by addr.
func throughAddr(t *testing.T, target, addr string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(target)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", cfg.User, addr, cfg.Database)
}

// proxy forwards each connection ln accepts to target's server, over its
// Unix socket or TCP.
func proxy(t *testing.T, ln net.Listener, target string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(target)
	if err != nil {
		t.Fatal(err)
	}
	network, dst := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, dst = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var d net.Dialer
				s, err := d.DialContext(ctx, network, dst)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c) }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
}

// ReadyWhenReachable logs its first tries, then, while the database stays
// unreachable for the same reason, at most once a minute: it logged every
// try, 720 lines an hour at its 5s ceiling.
func TestReadyWhenReachableLogsALongWaitQuietly(t *testing.T) {
	t.Parallel()
	target := pgtest.NewDatabase(t)
	var out pgtest.SyncBuffer
	db, err := dbopen.Dial(pgtest.Context(t), dbopen.Options{URL: throughAddr(t, target, pgtest.RefusingPort(t).Addr()), Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	tries := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() {
		done <- db.ReadyWhenReachable(ctx, false, func(why error) {
			if why != nil {
				tries <- struct{}{}
			}
		})
	}()
	const want = 6
	for range want {
		<-tries
	}
	cancel()
	<-done
	if n := strings.Count(out.String(), waitLine); n == 0 || n >= want {
		t.Fatalf("%d tries logged %d lines, want fewer after the first:\n%s", want, n, out.String())
	}
}
