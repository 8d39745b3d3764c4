package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore returns a store with a pool of its own (pgtest.OwnStore) on the
// migrated test database; tests keep apart by using queues of their own,
// whose DLQ ids start at a random large number, since other packages share
// the database.
func testStore(t testing.TB) *store.Store { return pgtest.OwnStore(t) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

// isolatedStore opens a migrated store on a database of its own, for tests
// of system-wide views that other tests' queues would disturb.
func isolatedStore(t *testing.T) *store.Store {
	t.Helper()
	return pgtest.OpenStore(t, pgtest.NewDatabase(t))
}

// lockableDeadQueue is a queue holding n dead messages (kind k, class E),
// on a database of its own, whose URL it returns for the sessions that
// hold its tables locked.
func lockableDeadQueue(t *testing.T, n int) (url string, s *store.Store, q string, ids []int64) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	s = pgtest.OpenStore(t, url)
	q = newQueue(t, s, nil)
	return url, s, q, pgtest.DeadLetterN(t, s, q, n, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
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

// newQueue creates a queue with fast settings (pgtest.FastSettings) changed
// by edit, dropped after the test. Its DLQ's ids start at a random large
// number, so that an id is in this DLQ only, even though other tests and
// packages share the database.
func newQueue(t testing.TB, s *store.Store, edit func(*store.QueueSettings)) string {
	t.Helper()
	return newQueueAt(t, s, pgtest.DLQStart(), edit)
}

// newQueueAt is newQueue with the DLQ's ids starting at first: two queues
// made with the same first have colliding DLQ ids.
func newQueueAt(t testing.TB, s *store.Store, first int64, edit func(*store.QueueSettings)) string {
	t.Helper()
	name := pgtest.NewFastQueue(t, s, "oq", edit)
	pgtest.RestartDLQ(t, s, name, first)
	return name
}

// inDLQ reports whether queue's DLQ holds id.
func inDLQ(t testing.TB, s *store.Store, queue string, id int64) bool {
	return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+queue+`_dlq" WHERE msg_id = $1`, id) == 1
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
	rows, err := s.Pool().Query(testContext(t), `SELECT tool, client, arguments::text, result::text, is_error FROM pgbus.audit_log WHERE client = $1 AND NOT pending ORDER BY id`, client)
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

// retried is the result of a retry run in the background.
type retried struct {
	out ops.DLQRetry
	err error
}

// retryBehindALock locks the newest message of queue's DLQ in a
// transaction of its own, then runs req with ctx in the background: a
// retry by filter, oldest first, moves the others and waits on that
// message, its transaction open, as a process killed there would leave
// it. release ends the lock's transaction (the test's end does too);
// done gives the retry's result.
func retryBehindALock(ctx context.Context, t *testing.T, s *store.Store, svc *ops.Service, queue string, req ops.DLQRetryRequest) (release func() error, done <-chan retried) {
	t.Helper()
	tx, err := s.Pool().Begin(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(testContext(t), `SELECT msg_id FROM pgmq.q_`+store.DLQName(queue)+` ORDER BY msg_id DESC LIMIT 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	out := make(chan retried, 1)
	go func() {
		r, err := svc.DLQRetry(ctx, req)
		out <- retried{r, err}
	}()
	return func() error { return tx.Rollback(testContext(t)) }, out
}

// reasonsOfCode returns every reason of code in the health verdict, read
// page by page as HealthOf lists them by code: the reasons other tests'
// queues give in the shared database, of other codes or many of this one,
// would crowd a test's own past the response bound of the whole verdict.
// A check slow to read the tables on a busy machine is asked again.
func reasonsOfCode(t *testing.T, svc *ops.Service, code string) []ops.HealthReason {
	t.Helper()
	ctx := testContext(t)
	var out []ops.HealthReason
	for cursor := ""; ; {
		var h ops.Health
		pgtest.Eventually(t, time.Minute, "a health check that reads the tables in time", func() bool {
			var err error
			if h, err = svc.HealthOf(ctx, ops.HealthRequest{Code: code, Cursor: cursor}); err != nil {
				t.Fatalf("health's reasons of %s: %v", code, err)
			}
			return !slices.ContainsFunc(h.Reasons, func(r ops.HealthReason) bool { return r.Code == "health_check_slow" })
		})
		for _, r := range h.Reasons {
			if r.Code != code {
				t.Fatalf("health's reasons of %s list one of %s: %+v", code, r.Code, r)
			}
		}
		out = append(out, h.Reasons...)
		if h.NextCursor == "" {
			return out
		}
		cursor = h.NextCursor
	}
}
