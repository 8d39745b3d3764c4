package bench

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The pool a run opens for its workers names its sessions as the
// command's do, so that pg_stat_activity tells a benchmark's sessions
// from those of the programs it shares the database with.
func TestOwnPoolKeepsTheApplicationName(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	st, err := store.OpenAs(ctx, pgtest.URL(t), "pgbus bench")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	own, closeOwn, err := ownPool(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOwn()
	if own == st {
		t.Fatal("ownPool returned the store itself for a store opened from a URL")
	}
	var name string
	if err := own.Pool().QueryRow(ctx, `SELECT current_setting('application_name')`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name != "pgbus bench" {
		t.Fatalf("the run's own sessions carry application_name %q; want %q", name, "pgbus bench")
	}
}
