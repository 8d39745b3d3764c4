package bouncertest_test

import (
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestRetentionElectionThroughBouncer elects the retention runner among
// processes that reach the server through the pooler and one that does
// not: while one holds the election the others find it taken, giving it up
// frees it for everyone, and nothing of it stays behind on a pooled server
// connection.
func TestRetentionElectionThroughBouncer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	direct := pgtest.OpenStore(t, dbURL)
	b := bouncertest.Start(t, dbURL)
	ctx := pgtest.Context(t)
	a, c := openStore(t, b.URL()), openStore(t, b.URL())

	q := pgtest.NewQueue(t, direct, "bq")
	id, err := a.Send(ctx, q, store.NewMessage{Payload: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Archive(ctx, q, id); err != nil || !ok {
		t.Fatalf("archive %d: %v, %v", id, ok, err)
	}
	// Older than any retention: the pass that runs must prune it.
	if _, err := direct.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`" SET archived_at = now() - interval '10 years'`); err != nil {
		t.Fatal(err)
	}

	turn, err := a.TryRetentionTurn(ctx)
	if err != nil || turn == nil {
		t.Fatalf("the first process through pgbouncer did not win a free election: %v, %v", turn, err)
	}
	for name, s := range map[string]*store.Store{"another process through pgbouncer": c, "a process connected directly": direct} {
		if other, err := s.TryRetentionTurn(ctx); err != nil || other != nil {
			t.Fatalf("%s won an election already held: %v, %v", name, other, err)
		}
		rep, err := s.RunRetention(ctx, 100, 0)
		if err != nil || rep.Ran {
			t.Fatalf("%s ran retention while another held the election: %+v, %v", name, rep, err)
		}
	}
	turn.End(ctx)
	rep, err := c.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention through pgbouncer after the turn ended: %+v, %v; want it to run", rep, err)
	}
	if rep.ArchivedDeleted[q] != 1 {
		t.Errorf("retention pruned %v, want the one old message of %s", rep.ArchivedDeleted, q)
	}

	// Many passes through the pooler, some at once: each either runs or
	// finds the election taken, and none leaves it held.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		s := []*store.Store{a, c}[i%2]
		wg.Go(func() {
			if _, err := s.RunRetention(ctx, 100, 0); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("retention through pgbouncer: %v", err)
	}
	for name, s := range map[string]*store.Store{"through pgbouncer": a, "directly": direct} {
		rep, err := s.RunRetention(ctx, 100, 0)
		if err != nil || !rep.Ran {
			t.Fatalf("retention %s after the passes: %+v, %v; want it to run (was the election left held?)", name, rep, err)
		}
	}
}

// openStore opens a store at url (through the pooler) without migrating,
// closed when the test ends.
func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(pgtest.Context(t), url)
	if err != nil {
		t.Fatalf("open a store through pgbouncer: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
