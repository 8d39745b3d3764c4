package engine

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A call begun before an outage was met, and ending well after it, does
// not end the outage: a server shutting down finishes some statements
// just after it cut other connections. A call begun after it does.
func TestOutageEndNeedsACallBegunAfterIt(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o := &outage{log: slog.New(slog.NewTextHandler(&logs, nil))}
	before := time.Now()
	time.Sleep(time.Millisecond) // the clock moves on between the two
	if !o.failed(&pgconn.PgError{Code: "57P03", Message: "the database system is shutting down"}) {
		t.Fatal("a server shutting down was not taken for an outage")
	}
	o.answered(before)
	if strings.Contains(logs.String(), "answers again") || !o.down.Load() {
		t.Fatalf("a call begun before the outage ended it:\n%s", logs.String())
	}
	// Nor does a call begun after it while others still fail: a server
	// shutting down ends its sessions one by one.
	o.answered(time.Now())
	if strings.Contains(logs.String(), "answers again") || !o.down.Load() {
		t.Fatalf("a call that succeeded just after a failure ended the outage:\n%s", logs.String())
	}
	o.mu.Lock()
	o.last = time.Now().Add(-downQuiet)
	o.mu.Unlock()
	o.answered(time.Now())
	if n := strings.Count(logs.String(), "answers again"); n != 1 || o.down.Load() {
		t.Fatalf("a call begun after the outage, none failing since: its end logged %d times, want once:\n%s", n, logs.String())
	}
}

// A database that takes no writes (a primary turned standby) is an
// outage like one that does not answer: said once for every loop that
// meets it, with what to do, not by each loop at each try; and as reads
// go on answering meanwhile, a read's success does not end it while
// writes are still refused.
func TestReadOnlyDatabaseIsOneOutage(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o := &outage{log: slog.New(slog.NewTextHandler(&logs, nil))}
	refused := &pgconn.PgError{Code: "25006", Message: "cannot execute UPDATE in a read-only transaction"}
	for range 20 {
		if !o.failed(refused) {
			t.Fatal("a write refused by a read-only database was not taken for an outage")
		}
	}
	o.answered(time.Now()) // a read that worked meanwhile
	if !o.failed(refused) {
		t.Fatal("a refused write after a read was not taken for an outage")
	}
	got := logs.String()
	if n := strings.Count(got, "level=WARN"); n != 1 || !strings.Contains(got, "the database takes no writes") || !strings.Contains(got, "point the database URL at the primary") ||
		strings.Contains(got, "takes writes again") {
		t.Fatalf("twenty-one refused writes and a read: %d warnings, want one saying the database takes no writes and what to do, and no end:\n%s", n, got)
	}
	// Once writes have been taken for a while, it ends.
	o.mu.Lock()
	o.last = time.Now().Add(-crowdedQuiet)
	o.mu.Unlock()
	o.answered(time.Now())
	if !strings.Contains(logs.String(), "the database takes writes again") || o.down.Load() {
		t.Fatalf("no end of the outage after %s without a refused write:\n%s", crowdedQuiet, logs.String())
	}
}

// A server out of disk space is one outage for the log too, saying what
// to do, where each loop logged the raw error at each try.
func TestDiskFullIsOneOutage(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o := &outage{log: slog.New(slog.NewTextHandler(&logs, nil))}
	full := &pgconn.PgError{Code: "53100", Message: `could not extend file "base/16384/16430": No space left on device`}
	for range 20 {
		if !o.failed(full) {
			t.Fatal("a write refused for want of disk space was not taken for an outage")
		}
	}
	if got := logs.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "out of disk space") || !strings.Contains(got, "free disk space on it") {
		t.Fatalf("twenty writes refused for want of disk space: want one warning saying so and what to do:\n%s", got)
	}
}

// An outage whose cause shows itself after its start (a pool waiting for
// a slot the server will not give first fails as a call without an
// answer) says the cause at once, with what ends it, rather than a
// minute on; and says it once.
func TestOutageCauseMetLateIsSaidAtOnce(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o := &outage{log: slog.New(slog.NewTextHandler(&logs, nil))}
	if !o.failed(context.DeadlineExceeded) {
		t.Fatal("a call without an answer was not taken for an outage")
	}
	crowded := &pgconn.PgError{Code: "53300", Message: `too many connections for role "app"`}
	for range 5 {
		if !o.failed(crowded) {
			t.Fatal("a refused connection was not taken for an outage")
		}
	}
	got := logs.String()
	if n := strings.Count(got, "level=WARN"); n != 2 || !strings.Contains(got, "does not answer") ||
		strings.Count(got, "refuses new connections: it has as many as it allows") != 1 || !strings.Contains(got, "CONNECTION LIMIT") {
		t.Fatalf("a call without an answer, then five refused connections: %d warnings, want two: the outage, then once its cause with what to do:\n%s", n, got)
	}
}
