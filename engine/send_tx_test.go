package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// callerPool is a pool of the caller's own on the database at url, as a
// service that keeps its data beside pgbus's has: not the store's.
func callerPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// begin begins a transaction on pool, rolled back when the test ends if it
// is still open.
func begin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// ordersTable creates a table of the caller's own, dropped after the test.
func ordersTable(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	name := uniqueName("orders")
	if _, err := pool.Exec(testContext(t), `CREATE TABLE `+name+` (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP TABLE `+name) })
	return name
}

func mustExec(t *testing.T, tx pgx.Tx, sql string, args ...any) {
	t.Helper()
	if _, err := tx.Exec(testContext(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func mustCommit(t *testing.T, tx pgx.Tx) {
	t.Helper()
	if err := tx.Commit(testContext(t)); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// keyRows counts the idempotency keys recorded for key on queue.
func keyRows(t *testing.T, s *store.Store, queue, key string) int {
	t.Helper()
	return pgtest.Int(t, s, `SELECT count(*) FROM pgbus.idempotency_keys WHERE queue_name = $1 AND key = $2`, queue, key)
}

// A job sent in the caller's transaction with its order row commits with
// it: before the commit no one else sees it; after, a real client works
// it with everything Send gives a job: kind, key, deadline and headers.
func TestSendTxCommitsWithTheCallersWrite(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	orders := ordersTable(t, pool)
	c := pgtest.NewClient(t, s, q, nil)
	var got atomic.Pointer[engine.Job]
	c.Handle("charge", func(_ context.Context, job *engine.Job) error { got.Store(job); return nil })
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)

	tx := begin(t, pool)
	mustExec(t, tx, `INSERT INTO `+orders+` (id) VALUES (42)`)
	id, err := c.SendTx(ctx, tx, q, map[string]int{"order": 42}, engine.SendOptions{
		Kind: "charge", IdempotencyKey: "charge:42", Deadline: deadline, Headers: map[string]any{"tenant": "acme"},
	})
	if err != nil {
		t.Fatalf("SendTx: %v", err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages seen outside the transaction before its commit, want 0", n)
	}
	mustCommit(t, tx)
	if n := pgtest.Int(t, s, `SELECT count(*) FROM `+orders); n != 1 {
		t.Fatalf("%d order rows after the commit, want 1", n)
	}

	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the charge job to run", func() bool { return got.Load() != nil })
	job := got.Load()
	if job.ID != id || job.Kind != "charge" || job.IdempotencyKey != "charge:42" || !job.Deadline.Equal(deadline) {
		t.Errorf("job %d kind %q key %q deadline %s; want %d charge charge:42 %s", job.ID, job.Kind, job.IdempotencyKey, job.Deadline, id, deadline)
	}
	if string(job.Payload) != `{"order": 42}` || string(job.Headers["tenant"]) != `"acme"` {
		t.Errorf("payload %s, tenant header %s", job.Payload, job.Headers["tenant"])
	}
	pgtest.Eventually(t, time.Minute, "the job archived", func() bool { return pgtest.Archived(t, s, q) == 1 })
}

// A rollback takes the message and its idempotency key with it: the key
// sends a new message afterwards.
func TestSendTxRollbackLeavesNoMessageAndNoKey(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	tx := begin(t, pool)
	first, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{{Payload: 2}, {Payload: 3, Options: engine.SendOptions{IdempotencyKey: "k2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages after the rollback, want 0", n)
	}
	if n := keyRows(t, s, q, "k") + keyRows(t, s, q, "k2"); n != 0 {
		t.Fatalf("%d idempotency keys left by the rolled back sends, want 0", n)
	}

	tx = begin(t, pool)
	again, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, tx)
	if again == first || again == ids[0] || again == ids[1] {
		t.Errorf("the key sent again after the rollback returned id %d, one of the rolled back messages (%d, %v)", again, first, ids)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages after sending the freed key again, want 1", n)
	}
}

// An idempotency key returns its first message sent earlier in the same
// transaction, in the same batch, and committed by another transaction.
func TestSendTxIdempotencyKeyInAndAcrossTransactions(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	tx := begin(t, pool)
	first, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{IdempotencyKey: "order:7"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.SendTx(ctx, tx, q, 2, engine.SendOptions{IdempotencyKey: "order:7"})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{
		{Payload: 3, Options: engine.SendOptions{IdempotencyKey: "order:8"}},
		{Payload: 4},
		{Payload: 5, Options: engine.SendOptions{IdempotencyKey: "order:8"}},
		{Payload: 6, Options: engine.SendOptions{IdempotencyKey: "order:7"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second != first || batch[2] != batch[0] || batch[3] != first || batch[1] == batch[0] {
		t.Fatalf("ids %d %d, batch %v: want the second send and the batch's last to return %d, and the batch's third its first", first, second, batch, first)
	}
	mustCommit(t, tx)
	if n := pgtest.Live(t, s, q); n != 3 {
		t.Fatalf("%d messages, want 3 (order:7, order:8 and one without a key)", n)
	}

	tx = begin(t, pool)
	third, err := c.SendTx(ctx, tx, q, 9, engine.SendOptions{IdempotencyKey: "order:7"})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, tx)
	if third != first {
		t.Errorf("a committed key sent in a later transaction returned %d, want %d", third, first)
	}
	// Send outside any transaction sees the key as well.
	if id := pgtest.Send(t, c, q, 10, engine.SendOptions{IdempotencyKey: "order:8"}); id != batch[0] {
		t.Errorf("Send of a key committed by SendBatchTx returned %d, want %d", id, batch[0])
	}
	if n := pgtest.Live(t, s, q); n != 3 {
		t.Errorf("%d messages, want still 3", n)
	}
}

// A send of a key that an open transaction holds waits for it: after its
// commit it returns the transaction's message, after its rollback it
// sends its own.
func TestSendTxKeyHeldUntilTheTransactionEnds(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		name := "rollback"
		if commit {
			name = "commit"
		}
		t.Run(name, func(t *testing.T) {
			s := testStore(t)
			ctx := testContext(t)
			q := newQueue(t, s, nil)
			pool := callerPool(t, pgtest.URL(t))
			c := pgtest.NewClient(t, s, q, nil)

			holder := begin(t, pool)
			held, err := c.SendTx(ctx, holder, q, 1, engine.SendOptions{IdempotencyKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				id  int64
				err error
			}
			waiter := make(chan result, 1)
			go func() {
				tx, err := pool.Begin(ctx)
				if err != nil {
					waiter <- result{err: err}
					return
				}
				defer func() { _ = tx.Rollback(context.Background()) }()
				id, err := c.SendTx(ctx, tx, q, 2, engine.SendOptions{IdempotencyKey: "k"})
				if err == nil {
					err = tx.Commit(ctx)
				}
				waiter <- result{id, err}
			}()
			pgtest.Eventually(t, time.Minute, "the second send to wait for the key's lock", func() bool {
				return pgtest.Int(t, s, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
					AND (classid::bigint << 32 | objid::bigint) = hashtextextended($1 || chr(1) || 'k', 0)`, q) > 0
			})
			select {
			case r := <-waiter:
				t.Fatalf("the second send returned (%d, %v) while the first transaction held the key", r.id, r.err)
			default:
			}
			if commit {
				mustCommit(t, holder)
			} else if err := holder.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-waiter
			if r.err != nil {
				t.Fatal(r.err)
			}
			if commit && r.id != held || !commit && r.id == held {
				t.Errorf("after the %s the waiting send returned %d; the holder's message is %d", name, r.id, held)
			}
			if n := pgtest.Live(t, s, q); n != 1 {
				t.Errorf("%d messages, want 1", n)
			}
		})
	}
}

// Priority levels route as Send does, message by message in a batch; a
// level the queue lacks is refused before anything is written.
func TestSendTxRoutesToPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	tx := begin(t, pool)
	if _, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{Priority: 2}); err != nil {
		t.Fatal(err)
	}
	ids, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{
		{Payload: 2, Options: engine.SendOptions{Priority: 1}},
		{Payload: 3},
		{Payload: 4, Options: engine.SendOptions{Priority: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{{Payload: 5}, {Payload: 6, Options: engine.SendOptions{Priority: 3}}})
	if !errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), "levels 0 to 2") || !strings.Contains(err.Error(), "the batch's message at index 1") {
		t.Fatalf("priority 3 of 3 levels: %v; want ErrInvalid naming the levels and the message", err)
	}
	mustCommit(t, tx)
	for level, want := range []int{1, 2, 1} {
		if n := pgtest.Live(t, s, store.PriorityQueueName(q, level)); n != want {
			t.Errorf("level %d holds %d messages, want %d", level, n, want)
		}
	}
	var payloads []string
	for _, lv := range []int{1, 0, 1} {
		var p string
		if err := s.Pool().QueryRow(ctx, `SELECT message::text FROM pgmq."q_`+store.PriorityQueueName(q, lv)+`" WHERE msg_id = $1`, ids[len(payloads)]).Scan(&p); err != nil {
			t.Fatalf("message %d at level %d: %v", ids[len(payloads)], lv, err)
		}
		payloads = append(payloads, p)
	}
	if strings.Join(payloads, ",") != "2,3,4" {
		t.Errorf("the batch's ids name payloads %v, want 2, 3, 4 in order", payloads)
	}
}

// The wake-up of LISTENing workers goes with the commit. A notification
// committed after the send but before its transaction commits reaches a
// listener first, as PostgreSQL delivers notifications in commit order;
// the send's own comes once the transaction commits, and with an hour
// between polls it alone makes the worker run the job.
func TestSendTxWakesListeningWorkersOnCommit(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	marker := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	var ran atomic.Int64
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.PollInterval = time.Hour })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	l, err := s.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	next := func() string {
		t.Helper()
		for {
			got, err := l.WaitForSend(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got == q || got == marker {
				return got
			}
		}
	}
	pgtest.Start(t, c)
	// A first message, sent by Send, runs once the worker listens.
	pgtest.Send(t, c, q, 0, engine.SendOptions{})
	if got := next(); got != q {
		t.Fatalf("notification for %q, want %q", got, q)
	}
	pgtest.Eventually(t, time.Minute, "the first message to run", func() bool { return ran.Load() == 1 })

	tx := begin(t, pool)
	if _, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	pgtest.Send(t, c, marker, 0, engine.SendOptions{})
	if got := next(); got != marker {
		t.Fatalf("notification for %q before the transaction committed, want the marker's %q", got, marker)
	}
	if n, runs := pgtest.Live(t, s, q), ran.Load(); n != 0 || runs != 1 {
		t.Fatalf("before the commit: %d messages visible, %d runs; want 0 and the first message's 1", n, runs)
	}
	mustCommit(t, tx)
	if got := next(); got != q {
		t.Fatalf("notification for %q after the commit, want %q", got, q)
	}
	pgtest.Eventually(t, time.Minute, "the job sent in the transaction to run, woken by its notification", func() bool { return ran.Load() == 2 })
}

// fixedHeaderSender is a SendObserver that adds a header, as a tracer adds
// its trace context, and keeps the ids its sends were given.
type fixedHeaderSender struct{ ids chan int64 }

func (fixedHeaderSender) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }
func (fixedHeaderSender) JobFinished(context.Context, *engine.Job, engine.Finish)       {}
func (o fixedHeaderSender) Sending(_ context.Context, _ string, opts *engine.SendOptions) func(int64, error) {
	opts.Headers["traceparent"] = "00-trace-span-01"
	return func(id int64, _ error) { o.ids <- id }
}

// The observers see every send of a transaction, the batch's message by
// message, and their headers are written with the messages.
func TestSendTxIsObserved(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	obs := fixedHeaderSender{ids: make(chan int64, 8)}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{obs} })

	tx := begin(t, pool)
	id, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{{Payload: 2}, {Payload: 3}})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, tx)
	want := append([]int64{id}, ids...)
	for i, w := range want {
		if got := <-obs.ids; got != w {
			t.Errorf("observer's send %d got id %d, want %d", i, got, w)
		}
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE headers->>'traceparent' = '00-trace-span-01'`); n != 3 {
		t.Errorf("%d messages carry the observer's header, want 3", n)
	}
}

// What SendTx refuses without writing leaves the caller's transaction as
// it was: the transaction goes on, sends a good message, and commits it.
func TestSendTxRefusalsLeaveTheTransactionUsable(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)
	huge := json.RawMessage(`"` + strings.Repeat("x", store.MaxPayloadBytes) + `"`)

	tx := begin(t, pool)
	for _, tc := range []struct {
		name  string
		send  func() error
		is    error
		words string
	}{
		{"unknown queue", func() error {
			_, err := c.SendTx(ctx, tx, uniqueName("nowhere"), 1, engine.SendOptions{})
			return err
		}, store.ErrNotFound, "create it first"},
		{"huge payload", func() error {
			_, err := c.SendTx(ctx, tx, q, huge, engine.SendOptions{})
			return err
		}, store.ErrInvalid, "store large data elsewhere"},
		{"huge payload in a batch", func() error {
			_, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{{Payload: 1}, {Payload: huge}})
			return err
		}, store.ErrInvalid, "the batch's message at index 1"},
		{"reserved header", func() error {
			_, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{Headers: map[string]any{"pgbus_kind": "x"}})
			return err
		}, store.ErrInvalid, "reserved"},
		{"dead-letter queue", func() error {
			_, err := c.SendTx(ctx, tx, q+"_dlq", 1, engine.SendOptions{})
			return err
		}, store.ErrInvalid, "send to \"" + q + "\" instead"},
		{"deadline before year 1", func() error {
			_, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{Deadline: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)})
			return err
		}, store.ErrInvalid, "years 1 to 9999"},
		{"deadline after year 9999", func() error {
			_, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{Deadline: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
			return err
		}, store.ErrInvalid, "years 1 to 9999"},
		{"priority on a plain queue", func() error {
			_, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{Priority: 1})
			return err
		}, store.ErrInvalid, "no priority levels"},
		{"empty batch", func() error {
			_, err := c.SendBatchTx(ctx, tx, q, nil)
			return err
		}, store.ErrInvalid, "1 to 10000 messages"},
		{"nil transaction", func() error {
			_, err := c.SendTx(ctx, nil, q, 1, engine.SendOptions{})
			return err
		}, store.ErrInvalid, "pass the pgx.Tx that Begin returned"},
		{"nil pointer transaction", func() error {
			var nilTx *pgxpool.Tx
			_, err := c.SendTx(ctx, nilTx, q, 1, engine.SendOptions{})
			return err
		}, store.ErrInvalid, "pass the pgx.Tx that Begin returned"},
	} {
		err := tc.send()
		if !errors.Is(err, tc.is) || errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), tc.words) {
			t.Errorf("%s: %v; want %v saying %q, and not ErrTxFailed", tc.name, err, tc.is, tc.words)
		}
	}
	mustExec(t, tx, `SELECT 1`)
	if _, err := c.SendTx(ctx, tx, q, "good", engine.SendOptions{}); err != nil {
		t.Fatalf("a good send after the refusals: %v", err)
	}
	mustCommit(t, tx)
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages, want the good one", n)
	}
}

// A transaction on another database is refused before anything is
// written, and goes on; so is one already committed or rolled back.
func TestSendTxRefusesAnotherDatabaseAndAFinishedTransaction(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	c := pgtest.NewClient(t, s, q, nil)

	elsewhere := callerPool(t, pgtest.NewDatabase(t))
	tx := begin(t, elsewhere)
	_, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{})
	if !errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), "the store's database") {
		t.Fatalf("a transaction on another database: %v; want ErrInvalid saying to begin it on the store's database", err)
	}
	mustExec(t, tx, `SELECT 1`)
	mustCommit(t, tx)

	pool := callerPool(t, pgtest.URL(t))
	for _, end := range []func(pgx.Tx) error{
		func(tx pgx.Tx) error { return tx.Commit(ctx) },
		func(tx pgx.Tx) error { return tx.Rollback(ctx) },
	} {
		tx := begin(t, pool)
		if err := end(tx); err != nil {
			t.Fatal(err)
		}
		_, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{})
		if !errors.Is(err, store.ErrInvalid) || !errors.Is(err, pgx.ErrTxClosed) || !strings.Contains(err.Error(), "still open") {
			t.Errorf("a finished transaction: %v; want ErrInvalid and pgx.ErrTxClosed saying to send in one still open", err)
		}
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Errorf("%d messages, want 0", n)
	}
}

// An error PostgreSQL raises in the transaction aborts it, and says so:
// a number jsonb cannot hold is still the caller's to change (ErrInvalid)
// and also ErrTxFailed; a transaction that failed before is refused as
// such.
func TestSendTxErrorsInsideTheTransactionSayToRollBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	tx := begin(t, pool)
	_, err := c.SendTx(ctx, tx, q, json.RawMessage(`1e1000000`), engine.SendOptions{})
	if !errors.Is(err, store.ErrInvalid) || !errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), "roll it back") {
		t.Fatalf("a number jsonb cannot hold: %v; want ErrInvalid and ErrTxFailed saying to roll back", err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("the transaction ran a statement after ErrTxFailed; PostgreSQL aborts it")
	}
	_, err = c.SendTx(ctx, tx, q, 1, engine.SendOptions{})
	if !errors.Is(err, store.ErrTxFailed) || !strings.Contains(err.Error(), "failed on an earlier statement") {
		t.Fatalf("a send in an aborted transaction: %v; want ErrTxFailed saying it failed earlier", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Errorf("%d messages, want 0", n)
	}
}

// A queue dropped and made again with other levels since the client
// first sent to it is routed anew, as Send does, in the same transaction:
// the stale level is found missing before anything is written.
func TestSendTxRoutesAQueueMadeAgainWithOtherLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)
	pgtest.Send(t, c, q, 0, engine.SendOptions{Priority: 1}) // the client reads the three levels

	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	tx := begin(t, pool)
	if _, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{}); err != nil {
		t.Fatalf("SendTx to the queue made again without levels: %v", err)
	}
	mustCommit(t, tx)
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages in the plain queue, want 1", n)
	}
}

// A send in a savepoint that fails in PostgreSQL aborts only the
// savepoint: rolled back, the caller's transaction goes on and commits.
func TestSendTxInASavepoint(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	tx := begin(t, pool)
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendTx(ctx, sp, q, json.RawMessage(`1e1000000`), engine.SendOptions{}); !errors.Is(err, store.ErrTxFailed) {
		t.Fatalf("a number jsonb cannot hold, in a savepoint: %v; want ErrTxFailed", err)
	}
	if err := sp.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{}); err != nil {
		t.Fatalf("a send after the savepoint's rollback: %v", err)
	}
	mustCommit(t, tx)
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// Under REPEATABLE READ a key another transaction committed after the
// snapshot is not sent twice: the send fails the transaction with a
// serialization error, to be run again, which then returns the first
// message.
func TestSendTxKeyCommittedAfterARepeatableReadSnapshot(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	rr, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rr.Rollback(context.Background()) })
	mustExec(t, rr, `SELECT 1`) // takes the snapshot
	first := pgtest.Send(t, c, q, 1, engine.SendOptions{IdempotencyKey: "k"})
	_, err = c.SendTx(ctx, rr, q, 2, engine.SendOptions{IdempotencyKey: "k"})
	if code, _ := store.SQLState(err); !errors.Is(err, store.ErrTxFailed) || code != "40001" {
		t.Fatalf("a key committed after the snapshot: %v; want ErrTxFailed with SQLSTATE 40001", err)
	}
	if err := rr.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Rollback(context.Background()) })
	id, err := c.SendTx(ctx, again, q, 2, engine.SendOptions{IdempotencyKey: "k"})
	if err != nil || id != first {
		t.Fatalf("run again: (%d, %v), want the first message %d", id, err, first)
	}
	mustCommit(t, again)
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// A delay postpones the first delivery of a message sent in a
// transaction as it does one sent by Send, a batch's message by message.
func TestSendTxDelays(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	pool := callerPool(t, pgtest.URL(t))
	c := pgtest.NewClient(t, s, q, nil)

	tx := begin(t, pool)
	late, err := c.SendTx(ctx, tx, q, 1, engine.SendOptions{Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.SendBatchTx(ctx, tx, q, []engine.BatchMessage{{Payload: 2}, {Payload: 3, Options: engine.SendOptions{Delay: 2 * time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, tx)
	for id, want := range map[int64]int{late: 60, ids[0]: 0, ids[1]: 120} {
		// Minutes from the enqueue to the first delivery, rounded.
		got := pgtest.Int(t, s, `SELECT round(extract(epoch FROM vt - enqueued_at) / 60)::int FROM pgmq."q_`+q+`" WHERE msg_id = $1`, id)
		if got != want {
			t.Errorf("message %d is first delivered %d minutes after its enqueue, want %d", id, got, want)
		}
	}
}
