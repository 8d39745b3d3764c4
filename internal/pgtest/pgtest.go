// Package pgtest gives tests a PostgreSQL database: the server named by
// PGBUS_TEST_DATABASE_URL, or else an embedded cluster (package embedpg)
// shared by every test binary of the run, so that `go test ./...` works on a
// machine with PostgreSQL installed and nothing running.
//
// Use it with
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and call URL(t) in tests. All callers share one database, pgbus: tests
// must not assume it is empty and should use names of their own (a schema or
// queue name per test) so that packages tested in parallel do not collide.
//
// It also holds the fixtures that the packages' tests share: stores
// (Store, OpenStore), queues (NewQueue, NewFastQueue, RestartDLQ), dead
// letters (DeadLetter, DeadLetterN), engine clients (NewClient, Start, Send)
// and the built pgbus command (MainWithBinary).
package pgtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/embedpg"
)

// EnvURL names the variable that points tests at an existing server.
const EnvURL = "PGBUS_TEST_DATABASE_URL"

var (
	mu       sync.Mutex
	once     sync.Once
	cluster  *embedpg.Cluster
	startErr error
)

// URL returns the connection string for tests: PGBUS_TEST_DATABASE_URL when
// set, else an embedded cluster shared by all test binaries of this run,
// started on first use. It fails the test (never skips it) when the embedded
// cluster cannot start.
func URL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	once.Do(start)
	mu.Lock()
	defer mu.Unlock()
	if startErr != nil {
		tb.Fatalf("pgtest: %v (or set %s to use a running server)", startErr, EnvURL)
	}
	return cluster.URL()
}

// DataDir is where the test cluster lives: one per user, shared by the test
// binaries that `go test ./...` runs in parallel (embedpg coordinates them).
func DataDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("pgbus-test-%d", os.Geteuid()))
}

func start() {
	// Generous: parallel test binaries may all be compiling and starting.
	c, err := embedpg.Start(context.Background(), embedpg.Options{
		DataDir:      DataDir(),
		StartTimeout: 2 * time.Minute,
	})
	if err == nil {
		err = skipFsync(c.URL())
	}
	mu.Lock()
	defer mu.Unlock()
	cluster, startErr = c, err
}

// skipFsync turns off fsync and full-page writes on the test cluster, where
// commits and CREATE DATABASE would otherwise wait for the disk: a third of
// the time of a package's tests. Data still outlives a crash or a kill of
// PostgreSQL, which tests cause, since the page cache keeps what was
// written and commits still write their WAL before they return; only a
// crash of the machine could lose it, and a test cluster does not care.
// A server of PGBUS_TEST_DATABASE_URL is left as it is.
func skipFsync(url string) error {
	// ALTER SYSTEM runs outside a transaction: one statement each.
	return execEach(url, "turn fsync off", `ALTER SYSTEM SET fsync = off`, `ALTER SYSTEM SET full_page_writes = off`, `SELECT pg_reload_conf()`)
}

// execEach runs each statement on its own on one connection to url, for
// what (the words of its errors), within a minute.
func execEach(url, what string, statements ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", what, err)
	}
	defer conn.Close(ctx)
	for _, sql := range statements {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %s: %w", what, sql, err)
		}
	}
	return nil
}

// Main runs the tests and then stops the embedded cluster if this process
// used one; the server itself keeps running while other test binaries still
// use it. Without Main the server outlives the run and the next run adopts
// it.
//
// Unless -parallel is given, Main runs up to Parallel parallel tests at a
// time rather than one per CPU (see Parallel).
func Main(m *testing.M) int {
	if err := defaultParallel(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 2
	}
	code := m.Run()
	if err := dropTemplates(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	cluster = nil
	return code
}

// Parallel is how many parallel tests Main runs at a time unless -parallel
// says otherwise. The tests of a package that talks to PostgreSQL spend
// most of their time waiting: for the server, for a worker's next poll, for
// a visibility timeout or a command to start. Go's default of one test per
// CPU leaves a 2-CPU machine idle through those waits.
const Parallel = 8

// defaultParallel sets -test.parallel to Parallel when the command line did
// not set it.
func defaultParallel() error {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given || flag.Lookup("test.parallel") == nil {
		return nil
	}
	return flag.Set("test.parallel", fmt.Sprint(Parallel))
}
