package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// holdDLQ begins a transaction that reads queue's DLQ and so holds an
// ACCESS SHARE lock on it, as a long read or a read of every DLQ does,
// until release, and returns the backend's pid.
func holdDLQ(t *testing.T, s *store.Store, queue string) (pid int, release func()) {
	t.Helper()
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT count(*) FROM `+pgx.Identifier{"pgmq", "q_" + queue + "_dlq"}.Sanitize()+`) c`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			_ = tx.Rollback(context.Background())
		}
	}
	t.Cleanup(release)
	return pid, release
}

// dropGivenUp drops queue through s with a context whose deadline passes
// once the drop, its tables or its DLQ's group counts held by another
// session, is seen waiting in a try that began after another it was seen
// waiting in: a try was given up for that session. A deadline of a fixed
// time from the call could pass, on a busy machine, before the drop's
// first try had waited for anything. It returns how long the drop was
// seen trying before the deadline passed, which it waited at least, how
// long the call took, which it waited at most, and the drop's error.
func dropGivenUp(t *testing.T, s *store.Store, queue string) (seen, took time.Duration, err error) {
	t.Helper()
	ctx := testContext(t)
	dropCtx := newDeadline(ctx)
	begun := time.Now()
	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(dropCtx, queue) }()
	var first, firstSeen time.Time
	pgtest.Eventually(t, time.Minute, "a second try of the drop of "+queue+" to wait", func() bool {
		var since []time.Time
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(array_agg(query_start), '{}') FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND wait_event_type = 'Lock'
			  AND strpos(query, 'pg_advisory_xact_lock(pgbus.dlq_groups_lock_key(') > 0 AND strpos(query, $1) > 0`, store.DLQName(queue)).Scan(&since); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-dropped:
			t.Fatalf("the drop of %s ended before its deadline: %v", queue, err)
		default:
		}
		if len(since) == 0 {
			return false
		}
		if first.IsZero() {
			first, firstSeen = since[0], time.Now()
		}
		return !since[0].Equal(first)
	})
	seen = time.Since(firstSeen)
	dropCtx.pass()
	err = <-dropped
	return seen, time.Since(begun), err
}

// deadline is a context whose deadline passes when the test says (pass),
// or when its parent ends: its Err is then context.DeadlineExceeded, as a
// context.WithTimeout's is once its time passed.
type deadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadline(parent context.Context) *deadline {
	d := &deadline{Context: parent, done: make(chan struct{})}
	context.AfterFunc(parent, d.pass)
	return d
}

func (d *deadline) pass()                 { d.once.Do(func() { close(d.done) }) }
func (d *deadline) Done() <-chan struct{} { return d.done }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestDropHoldsNoTableWhileItWaits: a drop whose DLQ another session
// holds (a long read) waits for it without holding the queue's own
// tables meanwhile: reads of the queue, bounded by a lock_timeout as
// the reads people and agents wait on are, go on answering, where they
// waited behind the drop's lock on the queue's table for as long as the
// DLQ was held. Once the DLQ is let go, the drop completes.
func TestDropHoldsNoTableWhileItWaits(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "droplock")
	holder, release := holdDLQ(t, s, q)

	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(ctx, q) }()
	pgtest.Eventually(t, time.Minute, "the drop to wait for the DLQ's table", func() bool {
		var n int
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'
			AND relation = to_regclass($1) AND pid <> $2`, pgx.Identifier{"pgmq", "q_" + q + "_dlq"}.Sanitize(), holder).Scan(&n)
		return err == nil && n > 0
	})
	for i := range 8 {
		if err := readBounded(ctx, s, q); err != nil {
			t.Fatalf("read %d of queue %s while its drop waits for its DLQ: %v; want the drop to hold none of its tables while it waits", i+1, q, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-dropped:
		t.Fatalf("the drop ended while another session held its DLQ: %v", err)
	default:
	}
	release()
	if err := <-dropped; err != nil {
		t.Fatalf("the drop, once the DLQ was let go: %v", err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) t WHERE to_regclass(t) IS NOT NULL`,
		[]string{"pgmq.q_" + q, "pgmq.a_" + q, "pgmq.q_" + q + "_dlq", "pgmq.a_" + q + "_dlq"}).Scan(&left); err != nil || left != 0 {
		t.Fatalf("tables of the dropped queue left: %d (%v)", left, err)
	}
}

// readBounded reads queue's table in a transaction whose lock waits are
// bounded to 2s: longer than the longest try of a drop (a try holds
// later reads behind it while it waits), shorter than the lock bound of
// the reads of the operations layer (3s by default), and far shorter than
// the drop's wait for its DLQ.
func readBounded(ctx context.Context, s *store.Store, queue string) error {
	return pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT count(*) FROM `+pgx.Identifier{"pgmq", "q_" + queue}.Sanitize())
		return err
	})
}

// TestDropGivenUpWhileTablesHeldSaysWho: a drop whose context ends while
// another session holds its DLQ drops nothing, and says which session
// holds what; the queue and its messages stay.
func TestDropGivenUpWhileTablesHeldSaysWho(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "droplock")
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{"keep": true}`)}); err != nil {
		t.Fatal(err)
	}
	holder, _ := holdDLQ(t, s, q)
	seen, took, err := dropGivenUp(t, s, q)
	held, ok := errors.AsType[*store.TablesHeldError](err)
	if !ok {
		t.Fatalf("drop given up while its DLQ was held: %v, want a TablesHeldError", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || held.Queue != q || held.Waited < seen || held.Waited > took {
		t.Errorf("given-up drop: %+v; want queue %s, waited from %s (seen trying) to %s (the call), and the deadline", held, q, seen, took)
	}
	want := []string{"q_" + q + "_dlq", "AccessShareLock", "pid " + strconv.Itoa(holder)}
	for _, w := range want {
		if !strings.Contains(held.HeldBy, w) {
			t.Errorf("the error names the holders as %q; want it to name %q", held.HeldBy, w)
		}
	}
	if !strings.Contains(held.Terminate, "pg_terminate_backend("+strconv.Itoa(holder)+")") {
		t.Errorf("terminate statement %q does not end the holder %d", held.Terminate, holder)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("the queue whose drop was given up holds %d messages, want its 1 kept", n)
	}
}

// TestDropGivenUpWhileGroupCountsHeldSaysWho: a drop given up while
// another session holds the lock of its DLQ's group counts (a fold or a
// recount of them, held long) names that session too, though it holds no
// table.
func TestDropGivenUpWhileGroupCountsHeldSaysWho(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "droplock")
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT pg_advisory_xact_lock(pgbus.dlq_groups_lock_key($1))) l`, store.DLQName(q)).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	_, _, err = dropGivenUp(t, s, q)
	held, ok := errors.AsType[*store.TablesHeldError](err)
	if !ok || !strings.Contains(held.HeldBy, "group counts of "+store.DLQName(q)) || !strings.Contains(held.HeldBy, "pid "+strconv.Itoa(holder)) ||
		!strings.Contains(held.Terminate, "pg_terminate_backend("+strconv.Itoa(holder)+")") {
		t.Fatalf("drop given up while the DLQ's group counts were held: %v; want it to name them and the holder, pid %d", err, holder)
	}
}

// TestDropNamesOnlyHoldersOfItsOwnDatabase: two databases copied from one
// template hold tables of the same relation ids. A drop given up in one
// names the session of its own database that holds its DLQ, never the
// one holding the same table of the other database, which ending would
// not help.
func TestDropNamesOnlyHoldersOfItsOwnDatabase(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const q = "twin"
	build := func(tb testing.TB, url string) {
		s, err := store.Open(ctx, url)
		if err != nil {
			tb.Fatal(err)
		}
		defer s.Close()
		if err := s.CreateQueue(ctx, q); err != nil {
			tb.Fatal(err)
		}
	}
	here := pgtest.OpenStore(t, pgtest.FromTemplate(t, "droplock-twin", build))
	there := pgtest.OpenStore(t, pgtest.FromTemplate(t, "droplock-twin", build))
	ours, _ := holdDLQ(t, here, q)
	theirs, _ := holdDLQ(t, there, q)
	_, _, err := dropGivenUp(t, here, q)
	held, ok := errors.AsType[*store.TablesHeldError](err)
	if !ok || !strings.Contains(held.HeldBy, "pid "+strconv.Itoa(ours)) {
		t.Fatalf("drop given up while its DLQ was held: %v; want it to name the holder of its own database, pid %d", held, ours)
	}
	if strings.Contains(held.HeldBy, "pid "+strconv.Itoa(theirs)) || strings.Contains(held.Terminate, strconv.Itoa(theirs)) {
		t.Errorf("the drop names pid %d, which holds the same table of another database: %s; %s", theirs, held.HeldBy, held.Terminate)
	}
}

// CreateQueueWithSettings refuses, before it writes anything, a name that
// is no queue name, priority levels out of range and settings out of
// range, saying what is wrong; none of those leaves a queue behind.
func TestCreateQueueWithSettingsRefusesBadInput(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	name := pgtest.Name("badcreate")
	good := pgtest.FastSettings(name)
	bad := func(edit func(*store.QueueSettings)) store.QueueSettings {
		q := good
		edit(&q)
		return q
	}
	for _, c := range []struct {
		what     string
		levels   int
		settings store.QueueSettings
		want     string
	}{
		{"an injected name", 0, bad(func(q *store.QueueSettings) { q.Queue = "x'); DROP TABLE pgmq.meta; --" }), "queue name"},
		{"one level", 1, good, "priority levels must be 2 to 10"},
		{"a huge number of levels", 1 << 30, good, "priority levels must be 2 to 10"},
		{"negative retries", 0, bad(func(q *store.QueueSettings) { q.MaxRetries = -1 }), "max_retries"},
		{"huge retries", 0, bad(func(q *store.QueueSettings) { q.MaxRetries = 1 << 30 }), "max_retries"},
	} {
		err := s.CreateQueueWithSettings(ctx, c.levels, c.settings)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it refused as invalid, saying %q", c.what, err, c.want)
		}
	}
	if ok, err := s.QueueExists(ctx, name); err != nil || ok {
		t.Errorf("queue %s after refused creates: exists %v (%v); want none", name, ok, err)
	}
}

// TestDropCancelledByItsCaller: a drop whose caller cancels it while no
// session holds its tables (its try is on its way to the server) ends
// with the caller's cancel, not with a TablesHeldError that blames other
// sessions; one cancelled after a try given up for another session
// holding its DLQ is a TablesHeldError, which wraps the cancel. The queue
// stays either way.
func TestDropCancelledByItsCaller(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	drop := func(via *store.Store, q string) (cancel func(), dropped <-chan error) {
		dropCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- via.DropQueue(dropCtx, q) }()
		t.Cleanup(cancel)
		return cancel, done
	}
	kept := func(q string) {
		t.Helper()
		if ok, err := s.QueueExists(ctx, q); err != nil || !ok {
			t.Errorf("queue %s after its drop was cancelled: exists %v (%v); want it kept", q, ok, err)
		}
	}

	t.Run("nothing held", func(t *testing.T) {
		proxy := pgtest.NewFreezingProxy(t, pgtest.URL(t))
		via := pgtest.OpenStore(t, proxy.URL())
		q := pgtest.NewQueue(t, s, "dropcancel")
		held, release := proxy.HoldWhenSent("IN ACCESS EXCLUSIVE MODE")
		t.Cleanup(release)
		cancel, dropped := drop(via, q)
		select {
		case <-held:
		case err := <-dropped:
			t.Fatalf("the drop ended before its try reached the server: %v", err)
		}
		cancel()
		err := <-dropped
		if _, ok := errors.AsType[*store.TablesHeldError](err); ok {
			t.Fatalf("a drop cancelled by its caller while no session held its tables: %v; want the caller's cancel, not a TablesHeldError", err)
		}
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), q) {
			t.Fatalf("a drop cancelled by its caller: %v; want it to wrap context.Canceled and name queue %s", err, q)
		}
		kept(q)
	})

	t.Run("tables held", func(t *testing.T) {
		q := pgtest.NewQueue(t, s, "dropcancel")
		holder, _ := holdDLQ(t, s, q)
		cancel, dropped := drop(s, q)
		// Two waits of the drop for the DLQ, begun at different times: a
		// try was given up for the holder, and another began.
		var first time.Time
		pgtest.Eventually(t, time.Minute, "a second try of the drop to wait for the DLQ", func() bool {
			var since []time.Time
			if err := s.Pool().QueryRow(ctx, `SELECT coalesce(array_agg(waitstart), '{}') FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'
				AND relation = to_regclass($1) AND pid <> $2 AND waitstart IS NOT NULL`, pgx.Identifier{"pgmq", "q_" + q + "_dlq"}.Sanitize(), holder).Scan(&since); err != nil {
				t.Fatal(err)
			}
			if len(since) == 0 {
				return false
			}
			if first.IsZero() {
				first = since[0]
			}
			return !since[0].Equal(first)
		})
		cancel()
		err := <-dropped
		held, ok := errors.AsType[*store.TablesHeldError](err)
		if !ok || held.Queue != q || !errors.Is(err, context.Canceled) {
			t.Fatalf("a drop cancelled while another session held its DLQ: %v; want a TablesHeldError of queue %s wrapping context.Canceled", err, q)
		}
		kept(q)
	})
}

// letGoInTurn, made in a session's pg_temp, holds each of tables (ACCESS
// SHARE, as a read does) in a subtransaction of its own, all at once, then
// lets them go one by one in their order, each pause seconds after a
// session came to wait for it: a drop that takes them all in one
// statement waits for each in turn, each wait shorter than its lock
// bound.
const letGoInTurn = `CREATE FUNCTION pg_temp.let_go_in_turn(tables text[], pause float8) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	n int := cardinality(tables);
BEGIN
	IF n = 0 THEN
		RETURN;
	END IF;
	BEGIN
		EXECUTE 'LOCK TABLE ' || tables[n] || ' IN ACCESS SHARE MODE';
		PERFORM pg_temp.let_go_in_turn(tables[1:n-1], pause);
		WHILE NOT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND relation = to_regclass(tables[n])
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) LOOP
			PERFORM pg_sleep(0.002);
		END LOOP;
		PERFORM pg_sleep(pause);
		RAISE EXCEPTION 'let go of %', tables[n]; -- rolls back the block, and its lock with it
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END
$f$`

// TestDropTryIsBoundedAsAWhole: a drop's try waits for the tables of a
// queue of ten priority levels in one LOCK TABLE, which takes them in
// turn; here other sessions hold each of them and let it go a little
// under the first try's bound (90 ms) after the drop came to wait for it.
// The try is bounded as a whole: it never waits, holding the tables it
// took, for much longer than the longest try (DropLockTryMax), where
// bounding each lock wait alone let it wait for the sum of the waits,
// about 2 s, while every read of the tables it held waited behind it. The
// drop still ends dropping the queue.
func TestDropTryIsBoundedAsAWhole(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := uniqueName("dropwhole")
	if err := s.CreatePriorityQueue(ctx, q, 10); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	var tables []string // in the order the drop takes them
	for i := range 10 {
		tables = append(tables, pgx.Identifier{"pgmq", "q_" + store.PriorityQueueName(q, i)}.Sanitize(), pgx.Identifier{"pgmq", "a_" + store.PriorityQueueName(q, i)}.Sanitize())
	}
	tables = append(tables, pgx.Identifier{"pgmq", "q_" + store.DLQName(q)}.Sanitize(), pgx.Identifier{"pgmq", "a_" + store.DLQName(q)}.Sanitize())

	holder := connect(t, pgtest.URL(t), "")
	var holderPID int
	if err := holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, letGoInTurn); err != nil {
		t.Fatal(err)
	}
	holdCtx, stopHolding := context.WithCancel(ctx)
	defer stopHolding()
	letGo := make(chan error, 1)
	go func() {
		_, err := holder.Exec(holdCtx, `SELECT pg_temp.let_go_in_turn($1, 0.09)`, tables)
		letGo <- err
	}()
	pgtest.Eventually(t, time.Minute, "another session to hold every table of the queue", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pg_locks WHERE pid = $1 AND granted AND relation = ANY(ARRAY(SELECT to_regclass(t) FROM unnest($2::text[]) t))`,
			holderPID, tables) == len(tables)
	})

	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(ctx, q) }()
	// The longest a try was seen waiting while it held a table of the
	// queue: from the start of its statement to the start of the
	// observation (now(), which comes before pg_stat_activity is read).
	var longest time.Duration
	for done := false; !done; {
		var ms float64
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(max(extract(epoch FROM now() - a.query_start) * 1000), 0)
			FROM pg_stat_activity a
			WHERE a.datname = current_database() AND a.state = 'active' AND a.wait_event_type = 'Lock'
			  AND a.query LIKE '%LOCK TABLE%' AND strpos(a.query, $1) > 0
			  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND l.mode = 'AccessExclusiveLock'
				AND l.relation = ANY(ARRAY(SELECT to_regclass(t) FROM unnest($2::text[]) t)))`, q, tables).Scan(&ms); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Duration(ms*float64(time.Millisecond)))
		select {
		case err := <-dropped:
			if err != nil {
				t.Fatalf("the drop, once the other sessions let go: %v", err)
			}
			done = true
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := <-letGo; err != nil {
		t.Fatalf("the sessions holding the tables: %v", err)
	}
	// The longest try is bounded at DropLockTryMax; the rest is room for
	// a loaded machine.
	if longest > store.DropLockTryMax+500*time.Millisecond {
		t.Errorf("a try of the drop waited %s while it held some of the queue's tables; want it bounded as a whole, at a try", longest)
	}
	if ok, err := s.QueueExists(ctx, q); err != nil || ok {
		t.Errorf("queue %s after its drop: exists %v (%v); want it dropped", q, ok, err)
	}
	t.Logf("longest wait of a try holding tables: %s", longest)
}

// A drop whose caller's deadline passes during its first try, while
// another session holds its DLQ, is a drop held up by that session too:
// it says who holds the tables, not only that its time ran out.
func TestDropEndedInItsFirstTrySaysWho(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "droplock")
	holder, _ := holdDLQ(t, s, q)
	dropCtx := newDeadline(ctx)
	dropped := make(chan error, 1)
	go func() { dropped <- s.DropQueue(dropCtx, q) }()
	pgtest.Eventually(t, time.Minute, "the drop of "+q+" to wait for its DLQ", func() bool {
		var waiting bool
		if err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' AND wait_event_type = 'Lock'
			  AND strpos(query, 'LOCK TABLE') > 0 AND strpos(query, $1) > 0)`, store.DLQName(q)).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting
	})
	dropCtx.pass()
	err := <-dropped
	held, ok := errors.AsType[*store.TablesHeldError](err)
	if !ok {
		t.Fatalf("drop ended while it waited for its DLQ, held by pid %d: %v; want a TablesHeldError naming that session", holder, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(held.HeldBy, "pid "+strconv.Itoa(holder)) {
		t.Errorf("drop ended while it waited for its DLQ: %+v; want the deadline, and pid %d among the holders", held, holder)
	}
}
