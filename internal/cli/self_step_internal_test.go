package cli

import (
	"errors"
	"slices"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A command given up while another session held a lock it waited for
// keeps itself as its next step, to run once that session ended: pgbus
// migrate that waited for a table's lock printed "next": [] with --json,
// its step to migrate again left out as the command that failed. A
// command that failed otherwise still leaves itself out: pgbus health
// that cannot reach the database is not told to see pgbus health.
func TestLockWaitKeepsTheSameCommandAsItsNextStep(t *testing.T) {
	a := &app{}
	held := &ops.Error{Msg: "store: migrate: waited for a lock held by pid 42; end it and migrate again",
		Err: errors.Join(ops.ErrUnavailable, ops.ErrLockWait), Hints: []ops.Hint{{Op: ops.OpMigrate, Why: "applies the schema migrations once the session holding the lock ended"}}}
	next := a.nextCommands(held, "pgbus migrate")
	if !slices.ContainsFunc(next, func(s nextStep) bool { return s.Command == "pgbus migrate" }) {
		t.Errorf("next steps of pgbus migrate given up on a lock = %+v; want pgbus migrate", next)
	}
	if line := a.errorLine(held, "pgbus migrate"); line != held.Msg+": see pgbus migrate" {
		t.Errorf("error line of pgbus migrate given up on a lock = %q; want it to end with: see pgbus migrate", line)
	}
	down := &ops.Error{Msg: "the database does not answer", Err: ops.ErrUnavailable, Hints: []ops.Hint{{Op: ops.OpHealth}}}
	if next := a.nextCommands(down, "pgbus health"); len(next) != 0 {
		t.Errorf("next steps of pgbus health that cannot reach the database = %+v; want none", next)
	}
}
