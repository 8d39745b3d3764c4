package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

// storeAndQueue is the shared test store and a new queue of it, with the
// settings newQueue gives.
func storeAndQueue(t testing.TB) (*store.Store, string) {
	t.Helper()
	s := testStore(t)
	return s, newQueue(t, s, nil)
}

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

// newQueue creates a queue with fast settings (pgtest.FastSettings) changed
// by edit, and drops it after the test.
func newQueue(t testing.TB, s *store.Store, edit func(*store.QueueSettings)) string {
	t.Helper()
	return pgtest.NewFastQueue(t, s, "eq", edit)
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

// snoozedUnrun counts the messages of queue that never ran but are
// invisible: jobs that met an open breaker and were snoozed, which gives
// their read back.
func snoozedUnrun(t testing.TB, s *store.Store, queue string) int {
	t.Helper()
	return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+queue+`" WHERE read_ct = 0 AND vt > clock_timestamp()`)
}

// overlap counts the calls of a handler and the most that ran at once.
type overlap struct{ calls, running, most atomic.Int32 }

// enter counts a call that starts; the call ends with leave.
func (o *overlap) enter() (leave func()) {
	o.calls.Add(1)
	n := o.running.Add(1)
	for m := o.most.Load(); n > m && !o.most.CompareAndSwap(m, n); m = o.most.Load() {
	}
	return func() { o.running.Add(-1) }
}

// slowJob is a handler that runs 5 seconds (five visibility timeouts of a
// second), says when it starts and finishes, and counts its runs.
type slowJob struct {
	overlap
	started, finished chan struct{}
}

// handleSlow registers a slowJob for kind on c.
func handleSlow(c *engine.Client, kind string) *slowJob {
	j := &slowJob{started: make(chan struct{}, 4), finished: make(chan struct{}, 4)}
	c.Handle(kind, func(context.Context, *engine.Job) error {
		defer j.enter()()
		j.started <- struct{}{}
		time.Sleep(5 * time.Second)
		j.finished <- struct{}{}
		return nil
	}, engine.HandlerOptions{Timeout: time.Minute})
	return j
}

func (j *slowJob) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-j.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow job did not start")
	}
}

func (j *slowJob) waitFinished(t *testing.T) {
	t.Helper()
	select {
	case <-j.finished:
	case <-time.After(time.Minute):
		t.Fatal("the slow job did not finish")
	}
}

// held is a handler that says on started that it runs, then returns once
// release is closed.
func held(started chan<- struct{}, release <-chan struct{}) engine.HandlerFunc {
	return func(context.Context, *engine.Job) error {
		started <- struct{}{}
		<-release
		return nil
	}
}

// runInBackground runs c until stop is called; Run's error arrives on
// done.
func runInBackground(c *engine.Client) (stop context.CancelFunc, done <-chan error) {
	ctx, stop := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- c.Run(ctx) }()
	return stop, ch
}

// signalRuns makes c's handler of queue q tell the returned channel that
// it ran a job (once, until the channel is read).
func signalRuns(c *engine.Client, q string) <-chan struct{} {
	ran := make(chan struct{}, 1)
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	})
	return ran
}

// awaitWhileRunning waits up to a minute for cond, failing if Run, whose
// end done tells, returns first.
func awaitWhileRunning(t *testing.T, done <-chan error, what string, cond func() bool) {
	t.Helper()
	pgtest.Eventually(t, time.Minute, what, func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned while waiting for %s: %v", what, err)
		default:
		}
		return cond()
	})
}

// operatorWithAJob makes, in the database at dbURL, a queue holding one
// job and a role granted to operate it, and returns the queue, the role,
// its URL and a store logged in as it.
func operatorWithAJob(t *testing.T, dbURL string) (q, role, roleURL string, st *store.Store) {
	t.Helper()
	ctx := testContext(t)
	owner := pgtest.OpenStore(t, dbURL)
	q = newQueue(t, owner, nil)
	if _, err := owner.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	role, roleURL = pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, store.OperatorGrants(role))
	st, err := store.Open(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return q, role, roleURL, st
}

// awaitJobThenStop waits for the job ran tells of, failing if Run (whose
// end done tells) returns first, then stops Run and checks it returned
// no error; when is what let the job run, for the failure's words.
func awaitJobThenStop(t *testing.T, ran <-chan struct{}, stop context.CancelFunc, done <-chan error, when string, logs *pgtest.SyncBuffer) {
	t.Helper()
	select {
	case <-ran:
	case err := <-done:
		t.Fatalf("Run returned before working the job: %v\n%s", err, logs.String())
	case <-testContext(t).Done():
		t.Fatalf("the job did not run %s:\n%s", when, logs.String())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// loggedClient is pgtest.NewClient whose log, at level and above, is kept
// in the buffer returned; edit, when not nil, sets the rest of its
// configuration.
func loggedClient(t *testing.T, s *store.Store, q string, level slog.Level, edit func(*engine.Config)) (*engine.Client, *pgtest.SyncBuffer) {
	t.Helper()
	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
		if edit != nil {
			edit(cfg)
		}
	})
	return c, logs
}

// lockableClient is a logged client, waiting drain at a stop, of a new
// queue, on a pool of its own named after prefix; and the store of the
// queue on the test's own pool, in which the test holds locks on the
// queue's tables without taking a connection of the client's.
func lockableClient(t *testing.T, prefix string, drain time.Duration) (*store.Store, string, *engine.Client, *pgtest.SyncBuffer) {
	t.Helper()
	s := pgtest.OwnStore(t)
	q := newQueue(t, s, nil)
	c, logs := loggedClient(t, pgtest.OpenNamedStore(t, uniqueName(prefix)), q, slog.LevelInfo, func(cfg *engine.Config) { cfg.DrainTimeout = drain })
	return s, q, c, logs
}
