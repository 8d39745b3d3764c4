package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Mixed traffic on real PGMQ (its SQL installation script): a queue made by
// another PGMQ client with pgmq.create, unknown to pgbus, gets its DLQ from
// the worker, which works pgmq.send's messages with the default settings,
// dead-letters one, and works it again once retried; what pgbus sends and
// dead-letters is read with pgmq.read and archived with pgmq.archive.
func TestMixedTrafficOnRealPGMQ(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script+`; SELECT pgmq.create('payments')`); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	pgmqSend := func(payload, headers string) int64 {
		t.Helper()
		var id int64
		if err := s.Pool().QueryRow(ctx, `SELECT * FROM pgmq.send('payments', $1::jsonb, $2::jsonb)`, payload, headers).Scan(&id); err != nil {
			t.Fatalf("pgmq.send: %v", err)
		}
		return id
	}

	// Listed and given stats with the default settings before any pgbus
	// client touched it.
	work, err := s.WorkQueues(ctx)
	if err != nil || !slices.Contains(work, "payments") {
		t.Fatalf("work queues = %v, %v; want payments, made by pgmq.create", work, err)
	}
	stats, err := s.QueueStats(ctx, "payments", store.QueueStatsOptions{Archive: true})
	if err != nil || len(stats) != 1 || stats[0].Settings != store.DefaultQueueSettings("payments").Plain() {
		t.Fatalf("stats of payments = %+v, %v; want the default settings", stats, err)
	}

	var mu sync.Mutex
	kinds := map[int64]string{}
	attempts := map[int64]int{}
	var receipt, poison, flaky int64
	c := pgtest.NewClient(t, s, "payments", nil)
	record := func(job *engine.Job) int {
		mu.Lock()
		defer mu.Unlock()
		kinds[job.ID] = job.Kind
		attempts[job.ID]++
		return attempts[job.ID]
	}
	c.Handle("Receipt", func(_ context.Context, job *engine.Job) error { record(job); return nil })
	c.HandleQueue("payments", func(_ context.Context, job *engine.Job) error {
		n := record(job)
		switch {
		case job.ID == poison && n == 1:
			return engine.NonRetryable(errors.New("card number missing"))
		case job.ID == flaky && n == 1:
			return errors.New("gateway timeout")
		}
		return nil
	})
	// Ids are known before the worker starts, so the handler sees them.
	receipt = pgmqSend(`{"job_class":"Receipt","order":1}`, `null`)
	poison = pgmqSend(`{"order":2}`, `{"trace":"abc"}`)
	flaky = pgmqSend(`{"order":3}`, `null`)
	stop := pgtest.Start(t, c)

	pgtest.Eventually(t, 20*time.Second, "the receipt archived and the poison message dead-lettered", func() bool {
		return pgtest.Archived(t, s, "payments") >= 1 && pgtest.Live(t, s, "payments_dlq") == 1
	})
	mu.Lock()
	receiptKind, poisonKind := kinds[receipt], kinds[poison]
	mu.Unlock()
	if receiptKind != "Receipt" || poisonKind != "" {
		t.Fatalf("kinds %q and %q: want Receipt from the payload's job_class, and none for a payload without one", receiptKind, poisonKind)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.queues WHERE queue_name = 'payments'`); n != 0 {
		t.Fatalf("payments got a row in pgbus.queues; it should keep the defaults")
	}

	// The flaky message waits the default backoff: 5s after its failure,
	// which its worker may record after the others' outcomes.
	pgtest.Eventually(t, 20*time.Second, "the flaky message's failure recorded", func() bool {
		return len(failures(t, s, "payments", flaky)) > 0
	})
	fails := failures(t, s, "payments", flaky)
	if len(fails) != 1 || fails[0].RetryAt == nil {
		t.Fatalf("failures of the flaky message = %+v, want one with a retry time", fails)
	}
	if d := fails[0].RetryAt.Sub(fails[0].FailedAt); d < 4900*time.Millisecond || d > 5100*time.Millisecond {
		t.Fatalf("retry after %s, want the default backoff of 5s", d)
	}

	// The dead letter keeps the sender's headers and gets the block; PGMQ
	// reads it as any other message.
	var headers map[string]json.RawMessage
	var deadID int64
	var raw []byte
	if err := s.Pool().QueryRow(ctx, `SELECT msg_id, headers FROM pgmq.read('payments_dlq', 1, 1)`).Scan(&deadID, &raw); err != nil {
		t.Fatalf("pgmq.read of the DLQ: %v", err)
	}
	if err := json.Unmarshal(raw, &headers); err != nil {
		t.Fatal(err)
	}
	var block struct {
		Version     int    `json:"version"`
		Reason      string `json:"reason"`
		SourceQueue string `json:"source_queue"`
		MaxRetries  int    `json:"max_retries"`
	}
	if err := json.Unmarshal(headers[store.HeaderDeadLetter], &block); err != nil || string(headers["trace"]) != `"abc"` ||
		block.Version != 1 || block.Reason != "non_retryable_error" || block.SourceQueue != "payments" || block.MaxRetries != 5 {
		t.Fatalf("DLQ headers = %s (%v); want trace kept and a block for payments with the default max_retries 5", raw, err)
	}
	// pgmq.read hid it for a second; the retry takes it whatever its vt.
	rep, err := s.RetryDead(ctx, "payments_dlq", []int64{deadID}, store.RetryOptions{})
	if err != nil || rep.Retried != 1 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	pgtest.Eventually(t, 20*time.Second, "the retried and the flaky message worked", func() bool {
		return pgtest.Live(t, s, "payments") == 0 && pgtest.Archived(t, s, "payments") == 3
	})
	var retried []byte
	if err := s.Pool().QueryRow(ctx, `SELECT headers FROM pgmq.a_payments WHERE message = '{"order":2}'`).Scan(&retried); err != nil {
		t.Fatal(err)
	}
	var after map[string]json.RawMessage
	if err := json.Unmarshal(retried, &after); err != nil || string(after[store.HeaderDLQRetries]) != "1" || after[store.HeaderDeadLetter] != nil || string(after["trace"]) != `"abc"` {
		t.Fatalf("retried message's headers = %s; want pgbus_dlq_retries 1, no block, trace kept", retried)
	}

	// What pgbus sends is read and archived with PGMQ's functions, the
	// worker stopped so that it does not take the message first.
	stop()
	id := pgtest.Send(t, c, "payments", map[string]int{"order": 4}, engine.SendOptions{Kind: "Unhandled", Delay: time.Hour})
	if _, err := s.Pool().Exec(ctx, `SELECT pgmq.set_vt('payments', $1::bigint, 0)`, id); err != nil {
		t.Fatal(err)
	}
	var message string
	var kindHeader string
	err = s.Pool().QueryRow(ctx, `SELECT message::text, headers->>'pgbus_kind' FROM pgmq.read('payments', 60, 1)`).Scan(&message, &kindHeader)
	if err != nil || message != `{"order": 4}` || kindHeader != "Unhandled" {
		t.Fatalf("pgmq.read of pgbus's message = %s %s (%v)", message, kindHeader, err)
	}
	var archived bool
	if err := s.Pool().QueryRow(ctx, `SELECT pgmq.archive('payments'::text, $1::bigint)`, id).Scan(&archived); err != nil || !archived {
		t.Fatalf("pgmq.archive of pgbus's message = %v, %v", archived, err)
	}
}
