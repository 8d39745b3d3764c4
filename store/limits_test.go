package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// limitedStore opens a store on a database of its own, migrated, with a
// queue, and then given the settings set (such as "statement_timeout =
// '50ms'"), as a DBA sets them with ALTER DATABASE ... SET: the store
// returned connects after, so that its sessions take them. The tests of
// idle timeouts of a few milliseconds do not run in parallel: on a busy
// machine a connection waits that long between its connect and its first
// statement, and is ended before the store can use it.
func limitedStore(t *testing.T, set ...string) (*store.Store, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	q := newQueue(t, pgtest.OpenStore(t, url))
	for _, s := range set {
		pgtest.Exec(t, url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET `+strings.ReplaceAll(s, "'", "''")+`', current_database()); END $$`)
	}
	// Over TCP, as servers are reached: a write to a connection the
	// server closed goes through there, and the server's last word, why it
	// closed it, is what the next read gets.
	st, err := store.Open(testContext(t), pgtest.NewFreezingProxy(t, url).URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, q
}

// Open pings on a new connection when the server ended the first for
// sitting idle (idle_session_timeout) between its start and the ping, as
// on a busy machine: the ping never ran.
func TestOpenPingsAgainWhenTheServerEndedTheSessionForIdleness(t *testing.T) {
	url := pgtest.NewDatabase(t)
	pgtest.Exec(t, url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET idle_session_timeout = ''100ms''', current_database()); END $$`)
	proxy := pgtest.NewFreezingProxy(t, url)
	proxy.DelayWhenSent("-- ping", 400*time.Millisecond)
	st, err := store.Open(testContext(t), proxy.URL())
	if err != nil {
		t.Fatalf("Open with its first session ended for idleness before the ping: %v; want it to ping again on a new connection", err)
	}
	defer st.Close()
	if n := pgtest.Int(t, st, `SELECT 1`); n != 1 {
		t.Fatalf("SELECT 1 on the store opened: %d", n)
	}
}

// A pooled connection the server ended for sitting idle
// (idle_session_timeout) fails no call: the statement never ran on it, so
// it runs on another connection, a write as well as a read. The server's
// timeout is a second, so that a busy machine does not stall a new
// connection that long between its login and its first statement, which
// the server would end too, as it did one of 40ms; the store's pool pings
// no connection before it hands it out, so that the one handed out, idle
// past the timeout, is one the server ended (the store's own pool pings a
// connection idle 100ms or more, and replaces it when it failed).
func TestIdleSessionTimeoutFailsNoCall(t *testing.T) {
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	q := newQueue(t, pgtest.OpenStore(t, url))
	pgtest.Exec(t, url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET idle_session_timeout = ''1s''', current_database()); END $$`)
	// Over TCP, as in limitedStore.
	cfg, err := pgxpool.ParseConfig(pgtest.NewFreezingProxy(t, url).URL())
	if err != nil {
		t.Fatal(err)
	}
	store.ConfigurePool(cfg)
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	app := uniqueName("idle")
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	ended := &idleEnded{}
	cfg.ConnConfig.Tracer = ended
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	t.Cleanup(st.Close)
	// idle waits until the server ended the store's sessions, which it
	// used before, for sitting idle.
	watch := testStore(t)
	idle := func(what string) {
		t.Helper()
		pgtest.Eventually(t, time.Minute, "the server to end the store's idle sessions before "+what, func() bool {
			return pgtest.Int(t, watch, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app) == 0
		})
	}

	const sends = 3
	for i := range sends {
		if i > 0 {
			idle("send " + strconv.Itoa(i+1))
		}
		if _, err := st.Send(ctx, q, msg(`{}`)); err != nil {
			t.Fatalf("send %d after the server ended the idle connections: %v", i+1, err)
		}
	}
	// A read through the store likewise (a test's own query on the pool
	// would meet the ended connection as any caller without the store's
	// retry does).
	idle("the read")
	stats, err := st.QueueStats(ctx, q, store.QueueStatsOptions{})
	if err != nil {
		t.Fatalf("a read after the server ended the idle connections: %v", err)
	}
	if len(stats) != 1 || stats[0].Depth != sends {
		t.Errorf("the queue's stats: %+v; want %d messages: each send once", stats, sends)
	}
	// Each call after the first met the connection the server ended.
	if n := ended.n.Load(); n < sends {
		t.Errorf("%d statements met a connection the server ended for sitting idle; want one for each call after the first, %d", n, sends)
	}
}

// idleEnded is a tracer of a pool's connections that counts the
// statements that met their connection ended by the server for sitting
// idle (SQLSTATE 57P05).
type idleEnded struct{ n atomic.Int64 }

func (e *idleEnded) count(err error) {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "57P05" {
		e.n.Add(1)
	}
}

func (e *idleEnded) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (e *idleEnded) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	e.count(d.Err)
}

func (e *idleEnded) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

func (e *idleEnded) TracePrepareEnd(_ context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	e.count(d.Err)
}

// A listener outlives the server's idle_session_timeout: waiting for
// notifications, it tells the server now and then that its session is in
// use, and hears a send made long after the timeout. The timeout is a
// second, so that a busy machine does not delay the listener's word (every
// half of it) past it, as it did 200ms.
func TestListenerOutlivesIdleSessionTimeout(t *testing.T) {
	ctx := testContext(t)
	st, q := limitedStore(t, "idle_session_timeout = '1s'")
	l, err := st.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	go func() {
		time.Sleep(3 * time.Second)
		_, _ = st.Send(ctx, q, msg(`{}`))
	}()
	got, err := l.WaitForSend(ctx)
	if err != nil || got != q {
		t.Fatalf("WaitForSend = %q, %v; want %q: the listener's connection must outlive idle_session_timeout", got, err, q)
	}
}

// A listener that hears notifications more often than half the server's
// idle_session_timeout still tells the server its session is in use: the
// server counts idle time from the last statement, not the last
// notification.
func TestListenerOutlivesIdleSessionTimeoutWhileNotified(t *testing.T) {
	ctx := testContext(t)
	st, q := limitedStore(t, "idle_session_timeout = '1s'")
	l, err := st.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	const sends = 40 // 4s at 100ms: several timeouts' worth
	go func() {
		for range sends {
			time.Sleep(100 * time.Millisecond)
			_, _ = st.Send(ctx, q, msg(`{}`))
		}
	}()
	for i := range sends {
		if got, err := l.WaitForSend(ctx); err != nil || got != q {
			t.Fatalf("notification %d: %q, %v; want %q: the listener's connection must outlive idle_session_timeout", i, got, err, q)
		}
	}
}

// The elections (the alerting process's lease, the retention turn) hold a
// transaction open and idle by design: an
// idle_in_transaction_session_timeout the role or database sets ends
// neither, so that no process loses the election every few seconds.
func TestElectionsOutliveIdleInTransactionTimeout(t *testing.T) {
	ctx := testContext(t)
	st, _ := limitedStore(t, "idle_in_transaction_session_timeout = '100ms'")
	lease, err := st.TryLead(ctx, store.ElectionAlerts)
	if err != nil || lease == nil {
		t.Fatalf("TryLead: %v, %v", lease, err)
	}
	defer lease.Release(ctx)
	turn, err := st.TryRetentionTurn(ctx)
	if err != nil || turn == nil {
		t.Fatalf("TryRetentionTurn: %v, %v", turn, err)
	}
	time.Sleep(time.Second) // ten times the server's timeout
	if err := lease.Check(ctx); err != nil {
		t.Errorf("the lease, idle past idle_in_transaction_session_timeout: %v", err)
	}
	if again, err := st.TryRetentionTurn(ctx); err != nil || again != nil {
		t.Errorf("another retention turn while the first is held: %v, %v; want none", again, err)
		again.End(ctx)
	}
	turn.End(ctx)
	if again, err := st.TryRetentionTurn(ctx); err != nil || again == nil {
		t.Errorf("a retention turn once the first, idle past idle_in_transaction_session_timeout, ended: %v, %v; want it taken", again, err)
	}
}

// A listener starts under a tiny work_mem and temp_file_limit, where
// reading the view pg_settings spills to a temporary file the limit
// refuses: it read its setting so, and every start failed.
func TestListenUnderATinyTempFileLimit(t *testing.T) {
	t.Parallel()
	st, q := limitedStore(t, "work_mem = '64kB'", "temp_file_limit = '64kB'", "idle_session_timeout = '90s'")
	ctx := testContext(t)
	l, err := st.Listen(ctx)
	if err != nil {
		t.Fatalf("Listen under work_mem and temp_file_limit of 64kB: %v", err)
	}
	defer l.Close(ctx)
	if _, err := st.Send(ctx, q, msg(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := l.WaitForSend(ctx); err != nil || got != q {
		t.Fatalf("WaitForSend = %q, %v; want %q", got, err, q)
	}
}
