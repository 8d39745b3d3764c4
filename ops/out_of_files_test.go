package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A call whose process has no file descriptor left to open a connection
// with (a low ulimit -n, an HTTP server's clients holding them all) says
// so and what to raise, where it said that the database does not answer
// and to check the server: the database was never asked.
func TestOutOfFilesIsSaidAsTheProcesssLimit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st, runOut := pgtest.OutOfFilesStore(t)
	svc := newService(t, st, ops.Options{})
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{}); err != nil {
		t.Fatalf("queues before the process ran out of files: %v", err)
	}

	runOut()
	_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
	if err == nil {
		t.Fatal("queues with no file descriptor left to connect with: no error")
	}
	if msg := err.Error(); !strings.Contains(msg, "file descriptor") || !strings.Contains(msg, "ulimit -n") || strings.Contains(msg, "does not answer") {
		t.Errorf("queues with no file descriptor left to connect with: %q; want the process's limit of open files, not a database that does not answer", msg)
	}
	// The health check's advice, which a probe gives without the error,
	// says so too.
	if advice := ops.DatabaseAdvice(err); !strings.Contains(advice, "file descriptor") || !ops.OutOfFiles(err) {
		t.Errorf("advice for a call with no file descriptor left: %q (OutOfFiles %v); want the process's limit of open files", advice, ops.OutOfFiles(err))
	}
}
