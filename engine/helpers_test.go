package engine_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

// fastSettings makes retries quick enough for tests while keeping the
// formula: base 100ms doubling, capped at 10s.
func fastSettings(queue string) store.QueueSettings {
	q := store.DefaultQueueSettings(queue)
	q.RetryBackoff = 100 * time.Millisecond
	q.RetryBackoffMax = 10 * time.Second
	q.VisibilityTimeout = 5 * time.Second
	return q
}

// newQueue creates a queue with settings and drops it after the test.
func newQueue(t testing.TB, s *store.Store, edit func(*store.QueueSettings)) string {
	t.Helper()
	ctx := testContext(t)
	name := uniqueName("eq")
	if err := s.CreateQueue(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), name) })
	set := fastSettings(name)
	if edit != nil {
		edit(&set)
	}
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	return name
}

// newClient makes a client for one queue with a fixed jitter source (0.5
// makes the jitter factor exactly 1) and quick polling.
func newClient(t testing.TB, s *store.Store, queue string, edit func(*engine.Config)) *engine.Client {
	t.Helper()
	cfg := engine.Config{
		Queues:          []engine.QueueConfig{{Name: queue, Concurrency: 4}},
		PollInterval:    50 * time.Millisecond,
		SettingsRefresh: 100 * time.Millisecond,
		StatsFlush:      100 * time.Millisecond,
		DrainTimeout:    5 * time.Second,
		Rand:            func() float64 { return 0.5 },
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := engine.NewClient(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// start runs the client until the test ends (or stop is called) and fails
// the test if Run returns an error.
func start(t testing.TB, c *engine.Client) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(time.Minute):
				t.Errorf("Run did not return within a minute of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	pgtest.Eventually(t, timeout, what, cond)
}

func send(t testing.TB, c *engine.Client, queue string, payload any, opts engine.SendOptions) int64 {
	t.Helper()
	id, err := c.Send(testContext(t), queue, payload, opts)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return id
}

func count(t testing.TB, s *store.Store, sql string, args ...any) int {
	t.Helper()
	return pgtest.Int(t, s, sql, args...)
}

func archived(t testing.TB, s *store.Store, queue string) int {
	return count(t, s, `SELECT count(*) FROM pgmq."a_`+queue+`"`)
}

func live(t testing.TB, s *store.Store, queue string) int {
	return count(t, s, `SELECT count(*) FROM pgmq."q_`+queue+`"`)
}

type failureRow struct {
	Attempt  int
	Class    string
	Message  string
	Trace    string
	FailedAt time.Time
	RetryAt  *time.Time
}

// failures returns the recorded failures of a message where it lives now.
func failures(t testing.TB, s *store.Store, queue string, id int64) []failureRow {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT attempt, error_class, error_message, backtrace, failed_at, retry_at
		FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2 ORDER BY attempt, id`, queue, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []failureRow
	for rows.Next() {
		var f failureRow
		if err := rows.Scan(&f.Attempt, &f.Class, &f.Message, &f.Trace, &f.FailedAt, &f.RetryAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// deadMessage is a DLQ row with its block decoded.
type deadMessage struct {
	ID      int64
	Payload json.RawMessage
	Headers map[string]json.RawMessage
	Block   map[string]any
}

func deadMessages(t testing.TB, s *store.Store, queue string) []deadMessage {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT msg_id, message, headers FROM pgmq."q_`+queue+`_dlq" ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []deadMessage
	for rows.Next() {
		var d deadMessage
		var headers []byte
		if err := rows.Scan(&d.ID, &d.Payload, &headers); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(headers, &d.Headers); err != nil {
			t.Fatalf("DLQ headers %s: %v", headers, err)
		}
		if err := json.Unmarshal(d.Headers[store.HeaderDeadLetter], &d.Block); err != nil {
			t.Fatalf("dead-letter block in %s: %v", headers, err)
		}
		out = append(out, d)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
