package ops_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore returns the migrated store shared by this package's tests; they
// keep apart by using queues of their own, whose DLQ ids start at a random
// large number, since other packages share the database.
func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

// isolatedStore opens a migrated store on a database of its own, for tests
// of system-wide views that other tests' queues would disturb.
func isolatedStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := testContext(t)
	s, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// newService returns a Service over s.
func newService(t testing.TB, s *store.Store, opts ops.Options) *ops.Service {
	t.Helper()
	svc, err := ops.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// fastSettings makes retries quick enough for tests.
func fastSettings(queue string) store.QueueSettings {
	q := store.DefaultQueueSettings(queue)
	q.RetryBackoff = 100 * time.Millisecond
	q.RetryBackoffMax = 10 * time.Second
	q.VisibilityTimeout = 5 * time.Second
	return q
}

// newQueue creates a queue with fast settings, dropped after the test. Its
// DLQ's ids start at a random large number, so that an id is in this DLQ
// only, even though other tests and packages share the database.
func newQueue(t testing.TB, s *store.Store, edit func(*store.QueueSettings)) string {
	t.Helper()
	return newQueueAt(t, s, randomID(), edit)
}

// newQueueAt is newQueue with the DLQ's ids starting at first: two queues
// made with the same first have colliding DLQ ids.
func newQueueAt(t testing.TB, s *store.Store, first int64, edit func(*store.QueueSettings)) string {
	t.Helper()
	ctx := testContext(t)
	name := uniqueName("oq")
	if err := s.CreateQueue(ctx, name); err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), name) })
	set := fastSettings(name)
	if edit != nil {
		edit(&set)
	}
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, fmt.Sprintf(`ALTER TABLE pgmq."q_%s_dlq" ALTER COLUMN msg_id RESTART WITH %d`, name, first)); err != nil {
		t.Fatal(err)
	}
	return name
}

func randomID() int64 {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<40))
	return 1<<41 + n.Int64()
}

// missingID is an id no DLQ holds: far above the ids tests start DLQs at.
func missingID() int64 {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<40))
	return 1<<61 + n.Int64()
}

// deadSpec is how deadLetter's messages look and died.
type deadSpec struct {
	kind    string
	reason  string
	class   string
	message string
	trace   string
	payload string // JSON; default {"n": i}
	headers string // JSON object; default {"pgbus_kind": kind}
}

// deadLetter sends n messages to queue and dead-letters them at once as
// spec says; it returns their ids in the DLQ.
func deadLetter(t testing.TB, s *store.Store, queue string, n int, spec deadSpec) []int64 {
	t.Helper()
	specs := make([]deadSpec, n)
	for i := range specs {
		specs[i] = spec
		if spec.payload == "" {
			specs[i].payload = fmt.Sprintf(`{"n": %d}`, i)
		}
	}
	return deadLetterEach(t, s, queue, specs)
}

// deadLetterEach dead-letters one message per spec, in order.
func deadLetterEach(t testing.TB, s *store.Store, queue string, specs []deadSpec) []int64 {
	t.Helper()
	ctx := testContext(t)
	msgs := make([]store.NewMessage, len(specs))
	for i, spec := range specs {
		p, h := spec.payload, spec.headers
		if p == "" {
			p = `{}`
		}
		if h == "" {
			h = fmt.Sprintf(`{"pgbus_kind": %q}`, spec.kind)
		}
		msgs[i] = store.NewMessage{Payload: json.RawMessage(p), Headers: json.RawMessage(h)}
	}
	ids, err := s.SendBatch(ctx, queue, msgs)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	items := make([]store.DeadLetterItem, len(ids))
	for i, id := range ids {
		spec := specs[i]
		reason := spec.reason
		if reason == "" {
			reason = store.ReasonMaxRetriesExceeded
		}
		class := spec.class
		if class == "" {
			class = "E"
		}
		items[i] = store.DeadLetterItem{MsgID: id, Reason: reason, MaxRetries: 5, Failure: &store.Failure{
			Attempt: 5, Kind: spec.kind, ErrorClass: class, ErrorMessage: spec.message, Backtrace: spec.trace,
		}}
	}
	moved, err := s.DeadLetterMany(ctx, queue, store.DLQName(queue), store.SourceWorker, items)
	if err != nil || len(moved) != len(ids) {
		t.Fatalf("dead-letter %d: %d moved, %v", len(ids), len(moved), err)
	}
	out := make([]int64, len(moved))
	for i, m := range moved {
		out[i] = m.DLQMsgID
	}
	return out
}

func count(t testing.TB, s *store.Store, sql string, args ...any) int {
	t.Helper()
	return pgtest.Int(t, s, sql, args...)
}

func live(t testing.TB, s *store.Store, queue string) int {
	return count(t, s, `SELECT count(*) FROM pgmq."q_`+queue+`"`)
}

func archived(t testing.TB, s *store.Store, queue string) int {
	return count(t, s, `SELECT count(*) FROM pgmq."a_`+queue+`"`)
}

// inDLQ reports whether queue's DLQ holds id.
func inDLQ(t testing.TB, s *store.Store, queue string, id int64) bool {
	return count(t, s, `SELECT count(*) FROM pgmq."q_`+queue+`_dlq" WHERE msg_id = $1`, id) == 1
}

// newClient makes a worker client for one queue with quick polling.
func newClient(t testing.TB, s *store.Store, queue string) *engine.Client {
	t.Helper()
	c, err := engine.NewClient(s, engine.Config{
		Queues:          []engine.QueueConfig{{Name: queue, Concurrency: 4}},
		PollInterval:    50 * time.Millisecond,
		SettingsRefresh: 100 * time.Millisecond,
		StatsFlush:      100 * time.Millisecond,
		DrainTimeout:    5 * time.Second,
		Rand:            func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// start runs the client until the test ends or stop is called.
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

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	pgtest.Eventually(t, timeout, what, cond)
}

// mustJSON marshals v as a front end would.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// auditRow is one row of the audit log, read from the table.
type auditRow struct {
	Tool, Client, Arguments, Result string
	IsError                         bool
}

// auditRows returns the audit log rows of client, oldest first.
func auditRows(t testing.TB, s *store.Store, client string) []auditRow {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT tool, client, arguments::text, result::text, is_error FROM pgbus.audit_log WHERE client = $1 ORDER BY id`, client)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.Tool, &r.Client, &r.Arguments, &r.Result, &r.IsError); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hasHint reports whether hints hold one for op whose arguments include
// every key and value of args.
func hasHint(hints []ops.Hint, op string, args map[string]any) bool {
	for _, h := range hints {
		if h.Op != op {
			continue
		}
		ok := true
		for k, v := range args {
			if fmt.Sprint(h.Args[k]) != fmt.Sprint(v) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
