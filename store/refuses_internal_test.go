package store

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A bulk retry stops at a failure every other message would meet too:
// a server that takes no writes or lacks a resource; a failure of one
// message's own (a unique key, a check) lets the others go on.
func TestRefusesEvery(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]bool{
		"53100": true,  // disk full
		"53200": true,  // out of memory
		"53300": true,  // too many connections
		"53400": true,  // a configuration limit (temp_file_limit)
		"25006": true,  // read-only transaction
		"23505": false, // a unique key
		"23514": false, // a check
	} {
		err := fmt.Errorf("message 1 in orders_dlq: %w", &pgconn.PgError{Code: code})
		if got := refusesEvery(err); got != want {
			t.Errorf("refusesEvery(SQLSTATE %s) = %v, want %v", code, got, want)
		}
	}
	if refusesEvery(nil) {
		t.Error("refusesEvery(nil) = true")
	}
}
