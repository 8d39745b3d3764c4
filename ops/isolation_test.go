package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// limitedStore opens a store on a database of its own, migrated, with a
// fast queue, and then given the settings set (such as
// "default_transaction_isolation = serializable"), as a DBA sets them with
// ALTER DATABASE ... SET: the store returned connects after, so that its
// sessions take them. prepare, when not nil, runs before the settings, on
// a store whose sessions do not take them.
func limitedStore(t *testing.T, edit func(*store.QueueSettings), prepare func(*store.Store, string), set ...string) (*store.Store, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	before := pgtest.OpenStore(t, url)
	q := newQueue(t, before, edit)
	if prepare != nil {
		prepare(before, q)
	}
	for _, s := range set {
		pgtest.Exec(t, url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET `+strings.ReplaceAll(s, "'", "''")+`', current_database()); END $$`)
	}
	st, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, q
}

// Under a default isolation of SERIALIZABLE or REPEATABLE READ, several
// workers on one queue, with jobs that fail into retries and the DLQ while
// DLQ retries run beside them, lose and double nothing, and neither the
// workers nor the retries meet a conflict: pgbus runs its transactions at
// READ COMMITTED and runs a statement that conflicted again.
func TestWorkersAndRetriesUnderStrictIsolation(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"serializable", "repeatable read"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel() // each level on a database of its own
			ctx := testContext(t)
			st, q := limitedStore(t, func(s *store.QueueSettings) { s.MaxRetries = 2; s.RetryBackoff = 10 * time.Millisecond }, nil,
				"default_transaction_isolation = '"+level+"'")
			logs := &pgtest.SyncBuffer{}
			log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			const n = 150
			for range 3 {
				c := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Logger = log })
				c.HandleQueue(q, failSome)
				pgtest.Start(t, c)
			}
			msgs := make([]store.NewMessage, n)
			for i := range msgs {
				msgs[i] = store.NewMessage{Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}
			}
			if _, err := st.SendBatch(ctx, q, msgs); err != nil {
				t.Fatal(err)
			}
			svc := newService(t, st, ops.Options{})
			for range 20 {
				r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
				if err != nil || r.Failed > 0 {
					t.Errorf("a DLQ retry beside the workers: failed %d (%s), %v", r.Failed, r.FirstError, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			pgtest.Eventually(t, time.Minute, "the queue to be settled", func() bool { return pgtest.Live(t, st, q) == 0 })
			for _, c := range []struct {
				table string
				want  int
			}{{`q_` + q + `_dlq`, n / 3}, {`a_` + q, n - n/3}} {
				rows := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."`+c.table+`"`)
				distinct := pgtest.Int(t, st, `SELECT count(DISTINCT message->>'n') FROM pgmq."`+c.table+`"`)
				if rows != c.want || distinct != c.want {
					t.Errorf("%s holds %d messages, %d of them distinct; want %d once each", c.table, rows, distinct, c.want)
				}
			}
			if logs.String() != "" {
				t.Errorf("the workers warned:\n%s", logs.String())
			}
		})
	}
}

// failSome fails every third job for good and every third but one on its
// first attempt, and lets the others succeed.
func failSome(_ context.Context, j *engine.Job) error {
	var p struct{ N int }
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return engine.NonRetryable(err)
	}
	switch {
	case p.N%3 == 0:
		return engine.NonRetryable(fmt.Errorf("job %d cannot be done", p.N))
	case p.N%3 == 1 && j.Attempt == 1:
		return fmt.Errorf("job %d failed on its first attempt", p.N)
	}
	return nil
}
