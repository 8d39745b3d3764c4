package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// Workers started on a queue dropped and made again outside pgbus
// (pgmq.drop_queue, then pgmq.create) while none ran forget, before their
// first read, what pgbus kept of the queue before it: the failures of its
// message 1 were the history of the new message 1, which never ran.
func TestWorkersForgetTheQueueBeforeAQueueMadeAgainOutsidePgbus(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	const q = "remade"
	pgtest.CreateQueue(t, s, q)
	pgtest.SetFastSettings(t, s, q, nil)
	// Each in a transaction of its own, as a queue's life goes.
	for _, sql := range []string{`SELECT pgmq.send('remade', '{"old":1}')`,
		`INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message) VALUES ('remade', 1, 1, 'Old', 'boom')`,
		`SELECT pgmq.drop_queue('remade')`, `SELECT pgmq.create('remade')`, `SELECT pgmq.send('remade', '{"new":1}')`} {
		pgtest.Exec(t, url, sql)
	}

	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	var history atomic.Int64
	history.Store(-1)
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		h, err := s.FailureHistory(ctx, q, job.ID)
		if err != nil {
			return err
		}
		history.Store(int64(len(h)))
		return nil
	})
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the new message to run", func() bool { return history.Load() >= 0 })
	if n := history.Load(); n != 0 {
		t.Fatalf("the new message 1 ran with %d failures in its history, want none: they were the old message 1's", n)
	}
	if out := logs.String(); !strings.Contains(out, `msg="pgbus: queues were dropped and made again outside pgbus; what pgbus kept of the queues before them, under the same message ids, is forgotten" queues=[remade] failures=1`) {
		t.Fatalf("the workers did not say the queue was made again; log:\n%s", out)
	}
}
