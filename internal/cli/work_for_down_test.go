package cli_test

import (
	"strings"
	"testing"
)

// pgbus work --for D whose database does not answer at start gives up
// waiting for it when D runs out, saying that the time given ran out
// before the database answered, and exits 1. It waited the minute it
// waits without --for, past its deadline, and said only that the
// database was not reachable.
func TestWorkForGivesUpWaitingForTheDatabaseAtItsDeadline(t *testing.T) {
	t.Parallel()
	// Nothing listens on the port: every try is refused at once.
	const url = "postgres://pgbus@127.0.0.1:56399/x?sslmode=disable&connect_timeout=5"
	r := runBinary(t, binary, []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, "", "work", "--queue", "orders", "--handler", "demo", "--for", "2s", "--database-url", url)
	want := "the time given (--for 2s) ran out before the database answered, so no work was done"
	if r.code != 1 || !strings.Contains(lastLine(r.stderr), want) || !strings.Contains(lastLine(r.stderr), "connection refused") {
		t.Fatalf("work --for 2s on a database that does not answer: exit %d\n%s\nwant exit 1, its last line saying %q and why", r.code, r.stderr, want)
	}
}
