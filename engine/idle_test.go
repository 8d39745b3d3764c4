package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// statementLog counts the reads of each queue's table and the checks of
// idle queues a store's connections send.
type statementLog struct {
	queues []string
	mu     sync.Mutex
	reads  map[string]int
	checks int // checks naming every queue
}

func (l *statementLog) saw(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case strings.HasPrefix(sql, "WITH c AS"):
		for _, q := range l.queues {
			if strings.Contains(sql, `"q_`+q+`"`) {
				l.reads[q]++
			}
		}
	case strings.Contains(sql, "WHERE EXISTS (SELECT FROM"): // the check of idle queues
		for _, q := range l.queues {
			if !strings.Contains(sql, `"q_`+q+`"`) {
				return
			}
		}
		l.checks++
	}
}

func (l *statementLog) counts() (reads map[string]int, checks int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reads = make(map[string]int, len(l.reads))
	for q, n := range l.reads {
		reads[q] = n
	}
	return reads, l.checks
}

// waitForChecks waits until n checks of idle queues named every queue.
func (l *statementLog) waitForChecks(t *testing.T, n int) {
	t.Helper()
	pgtest.Eventually(t, time.Minute, fmt.Sprintf("%d checks of the idle queues", n), func() bool {
		_, checks := l.counts()
		return checks >= n
	})
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.saw(d.SQL)
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.saw(d.SQL)
}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// tracedStore opens a store on the test database whose statements log
// sees.
func tracedStore(t *testing.T, log *statementLog) *store.Store {
	t.Helper()
	testStore(t) // migrates the test database once
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool)
}

// idleClient works queues with the given handler, polling every 20ms and
// without notifications: only the check of idle queues finds what is sent.
func idleClient(t *testing.T, s *store.Store, queues []string, handle engine.HandlerFunc) *engine.Client {
	t.Helper()
	c := pgtest.NewClient(t, s, queues[0], func(cfg *engine.Config) {
		cfg.NoListen = true
		cfg.PollInterval = 20 * time.Millisecond
		cfg.DatabaseCallTimeout = 5 * time.Minute
		cfg.Queues = nil
		for _, q := range queues {
			cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: q, Concurrency: 2})
		}
	})
	for _, q := range queues {
		c.HandleQueue(q, handle)
	}
	return c
}

// Idle queues are checked for visible messages together, in one statement
// per poll interval, and a queue is read again only once the check finds
// something in it: each worker's own read every interval cost hundreds of
// queues a transaction each, finding nothing.
func TestIdleQueuesAreCheckedTogether(t *testing.T) {
	t.Parallel()
	shared := testStore(t)
	var queues []string
	for range 6 {
		queues = append(queues, newQueue(t, shared, nil))
	}
	log := &statementLog{queues: queues, reads: map[string]int{}}
	s := tracedStore(t, log)
	var ran atomic.Int64
	c := idleClient(t, s, queues, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pgtest.Start(t, c)
	log.waitForChecks(t, 25)
	reads, checks := log.counts()
	for _, q := range queues {
		// The first read, and one more if a check found the queue
		// between the read and its wait.
		if reads[q] < 1 || reads[q] > 2 {
			t.Errorf("queue %s was read %d times over %d checks of idle queues; want its first read only", q, reads[q], checks)
		}
	}
	pgtest.Send(t, c, queues[3], map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the message sent without a listener to run, found by a check", func() bool { return ran.Load() == 1 })
	if after, _ := log.counts(); after[queues[3]] <= reads[queues[3]] {
		t.Errorf("queue %s ran its message without a read logged (%d reads before, %d after)", queues[3], reads[queues[3]], after[queues[3]])
	}
}

// A check that fails (here because one of the idle queues was dropped)
// has each of its queues read by its worker: the dropped queue's worker
// finds out and waits for it, and the others run what is sent to them.
func TestIdleCheckThatFailsHasTheQueuesRead(t *testing.T) {
	t.Parallel()
	shared := testStore(t)
	dropped, kept := newQueue(t, shared, nil), newQueue(t, shared, nil)
	log := &statementLog{queues: []string{dropped, kept}, reads: map[string]int{}}
	s := tracedStore(t, log)
	var ran atomic.Int64
	c := idleClient(t, s, []string{dropped, kept}, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pgtest.Start(t, c)
	log.waitForChecks(t, 1)
	if _, err := shared.Pool().Exec(testContext(t), `DROP TABLE pgmq.`+pgx.Identifier{"q_" + dropped}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	pgtest.Send(t, c, kept, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the message of the queue kept to run while the other's table is gone", func() bool { return ran.Load() == 1 })
}

// A queue's table locked by another session (a long reader before a drop,
// a VACUUM FULL) holds neither the check of the other idle queues nor what
// is sent to them: the check waits for a lock only briefly, then has the
// workers read their queues themselves, where it waited for as long as
// the database call timeout.
func TestLockedQueueHoldsNotTheIdleCheck(t *testing.T) {
	t.Parallel()
	shared := testStore(t)
	locked, other := newQueue(t, shared, nil), newQueue(t, shared, nil)
	log := &statementLog{queues: []string{locked, other}, reads: map[string]int{}}
	s := tracedStore(t, log)
	var ran atomic.Int64
	c := idleClient(t, s, []string{locked, other}, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	pgtest.Start(t, c)
	log.waitForChecks(t, 1)
	holder, err := pgx.Connect(testContext(t), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(testContext(t), `BEGIN; LOCK TABLE pgmq.`+pgx.Identifier{"q_" + locked}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = holder.Exec(context.Background(), "ROLLBACK") }()
	pgtest.Send(t, c, other, map[string]int{"n": 1}, engine.SendOptions{})
	// The database call timeout is minutes: a check waiting for the lock
	// would hold the message past this wait.
	pgtest.Eventually(t, 2*time.Minute, "the other queue's message to run while the lock is held", func() bool { return ran.Load() == 1 })
}
