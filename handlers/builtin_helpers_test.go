package handlers_test

// Helpers of the http and exec handler tests: a real PostgreSQL store,
// queues of their own, a running engine client, and readers of what the
// engine recorded.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func sharedStore(t testing.TB) *store.Store { return pgtest.Store(t) }

func randomName(prefix string) string { return pgtest.Name(prefix) }

func ctxFor(t testing.TB) context.Context { return pgtest.Context(t) }

// fastQueue creates a queue whose retries are quick (pgtest.FastSettings
// with a 10s visibility timeout; no jitter surprises: the client's Rand
// makes the factor exactly 1), applies edit, and drops the queue after the
// test.
func fastQueue(t testing.TB, s *store.Store, edit func(*store.QueueSettings)) string {
	t.Helper()
	return pgtest.NewFastQueue(t, s, "hq", func(set *store.QueueSettings) {
		set.VisibilityTimeout = 10 * time.Second
		if edit != nil {
			edit(set)
		}
	})
}

// quickClient is pgtest.NewClient with concurrency workers and settings
// refreshed every 200ms.
func quickClient(t testing.TB, s *store.Store, queue string, concurrency int) *engine.Client {
	t.Helper()
	return pgtest.NewClient(t, s, queue, func(cfg *engine.Config) {
		cfg.Queues[0].Concurrency = concurrency
		cfg.SettingsRefresh = 200 * time.Millisecond
	})
}

// specFromYAML parses a handler block as it would appear in a configuration
// file, so that tests go through the same decoding as the binary.
func specFromYAML(t testing.TB, block string) handlers.Spec {
	t.Helper()
	var b strings.Builder
	b.WriteString("queues:\n  q:\n    handler:\n")
	for _, line := range strings.Split(strings.Trim(block, "\n"), "\n") {
		b.WriteString("      " + line + "\n")
	}
	f, err := config.Parse("test.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("parse handler block:\n%s\n%v", b.String(), err)
	}
	return *f.Queues["q"].Handler
}

func mustBuild(t testing.TB, spec handlers.Spec) (engine.HandlerFunc, engine.HandlerOptions) {
	t.Helper()
	fn, opts, err := handlers.Build(spec)
	if err != nil {
		t.Fatalf("Build(%+v): %v", spec, err)
	}
	return fn, opts
}

// forgetBreaker deletes a breaker now and after the test, so that a state
// left by an earlier run (a reused port) does not leak in.
func forgetBreaker(t testing.TB, s *store.Store, name string) {
	t.Helper()
	del := func() {
		_, _ = s.Pool().Exec(context.Background(), `DELETE FROM pgbus.circuit_breakers WHERE name = $1`, name)
	}
	del()
	t.Cleanup(del)
}

type failureRecord struct {
	Attempt  int
	Class    string
	Message  string
	FailedAt time.Time
	RetryAt  *time.Time
}

// delay is how long after the failure the engine scheduled the next
// attempt.
func (f failureRecord) delay() time.Duration {
	if f.RetryAt == nil {
		return -1
	}
	return f.RetryAt.Sub(f.FailedAt)
}

// failuresOf returns the recorded failuresOf of a message where it lives now
// (its queue, or its DLQ once dead).
func failuresOf(t testing.TB, s *store.Store, queue string, id int64) []failureRecord {
	t.Helper()
	rows, err := s.Pool().Query(ctxFor(t), `SELECT attempt, error_class, error_message, failed_at, retry_at
		FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2 ORDER BY attempt, id`, queue, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []failureRecord
	for rows.Next() {
		var f failureRecord
		if err := rows.Scan(&f.Attempt, &f.Class, &f.Message, &f.FailedAt, &f.RetryAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// archivedMsg is a message in the queue's archive.
type archivedMsg struct {
	ReadCount int
	Headers   map[string]json.RawMessage
}

func archivedOf(t testing.TB, s *store.Store, queue string) map[int64]archivedMsg {
	t.Helper()
	rows, err := s.Pool().Query(ctxFor(t), `SELECT msg_id, read_ct, coalesce(headers, '{}'::jsonb) FROM pgmq."a_`+queue+`"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]archivedMsg{}
	for rows.Next() {
		var id int64
		var r archivedMsg
		var h []byte
		if err := rows.Scan(&id, &r.ReadCount, &h); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(h, &r.Headers); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	return out
}

// deadBlocksOf returns the dead-letter blocks of a queue's DLQ by the
// original message id, and the DLQ id of each.
func deadBlocksOf(t testing.TB, s *store.Store, queue string) (map[int64]map[string]any, map[int64]int64) {
	t.Helper()
	rows, err := s.Pool().Query(ctxFor(t), `SELECT msg_id, headers FROM pgmq."q_`+queue+`_dlq"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	blocks, dlqIDs := map[int64]map[string]any{}, map[int64]int64{}
	for rows.Next() {
		var id int64
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			t.Fatal(err)
		}
		var h map[string]json.RawMessage
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		var b map[string]any
		if err := json.Unmarshal(h[store.HeaderDeadLetter], &b); err != nil {
			t.Fatalf("block in %s: %v", raw, err)
		}
		src := int64(b["source_msg_id"].(float64))
		blocks[src], dlqIDs[src] = b, id
	}
	return blocks, dlqIDs
}

// checkDeadBlock checks a dead message's reason, attempts and class.
func checkDeadBlock(t testing.TB, b map[string]any, what, reason string, attempts int, class string) {
	t.Helper()
	if b == nil {
		t.Errorf("%s: not in the DLQ", what)
		return
	}
	if b["reason"] != reason || b["attempts"] != float64(attempts) || b["error_class"] != class {
		t.Errorf("%s: reason %v, attempts %v, error_class %v; want %s, %d, %s (block %v)",
			what, b["reason"], b["attempts"], b["error_class"], reason, attempts, class, b)
	}
}

// deadLetterOne runs one message through a handler of the YAML block on a
// fast queue with maxRetries runs, waits until it is dead-lettered, and
// returns its dead-letter block and error message and its id in the DLQ.
func deadLetterOne(t testing.TB, s *store.Store, block string, maxRetries int, payloadCase string) (dead map[string]any, msg string, dlqID int64, queue string) {
	t.Helper()
	q := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = maxRetries })
	fn, opts := mustBuild(t, specFromYAML(t, block))
	c := quickClient(t, s, q, 1)
	c.HandleQueue(q, fn, opts)
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, testPayload{Case: payloadCase}, engine.SendOptions{})
	pgtest.Eventually(t, 20*time.Second, "the job to be dead-lettered", func() bool { return pgtest.Live(t, s, q) == 0 })
	blocks, dlqIDs := deadBlocksOf(t, s, q)
	dead = blocks[id]
	msg, _ = dead["error_message"].(string)
	return dead, msg, dlqIDs[id], q
}
