package engine

import (
	"bytes"
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
	o.answered(time.Now())
	if n := strings.Count(logs.String(), "answers again"); n != 1 || o.down.Load() {
		t.Fatalf("a call begun after the outage: its end logged %d times, want once:\n%s", n, logs.String())
	}
}
