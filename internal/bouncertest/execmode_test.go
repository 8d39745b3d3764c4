package bouncertest_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// TestDefaultExecModeSaysWhatToDo shows why the README asks for
// default_query_exec_mode behind PgBouncer in transaction mode: with pgx's
// default, statement cache, concurrent reads through the pooler meet
// prepared statements of other clients on the server connections they are
// handed, and the error says which parameter to add.
func TestDefaultExecModeSaysWhatToDo(t *testing.T) {
	t.Parallel()
	// One server connection: each statement meets the ones the calls
	// before it prepared there, rather than when the pooler happens to
	// hand two clients the same one.
	b := bouncertest.StartPool(t, pgtest.URL(t), 1)
	url := strings.Replace(b.URL(), "&"+bouncertest.SafeExecMode, "", 1)
	if url == b.URL() {
		t.Fatalf("the bouncer's URL %s does not end in %s", url, bouncertest.SafeExecMode)
	}
	// Two processes' pools, of one connection each, reading in turn: each
	// statement cache names a statement as the other does, so the second
	// meets the first's statement on the server connection at once.
	one := pgtest.WithParam(t, url, "pool_max_conns", "1")
	s, other := openStore(t, one), openStore(t, one)
	q := pgtest.NewQueue(t, pgtest.Store(t), "bx")
	// Reads of the pool, and the schema check every command starts with,
	// whose statements run in a transaction of its own, made by processes
	// one after another (each command's): a new process's statement cache
	// names its statements as the last one did, on server connections
	// that still hold them.
	for what, c := range map[string]struct {
		n    int
		read func() error
	}{
		"reads": {200, func() error {
			if _, err := s.IsEmpty(pgtest.Context(t), q); err != nil {
				return err
			}
			_, err := other.IsEmpty(pgtest.Context(t), q)
			return err
		}},
		"schema check": {20, func() error {
			fresh, err := store.Open(pgtest.Context(t), url)
			if err != nil {
				return err
			}
			defer fresh.Close()
			_, err = fresh.CheckSchema(pgtest.Context(t))
			return err
		}},
	} {
		errs := concurrently(c.n, c.read)
		if len(errs) == 0 {
			t.Fatalf("%s: %d concurrent calls with pgx's default exec mode through PgBouncer in transaction mode all worked; "+
				"the README's advice rests on their failing: check the bouncer's max_prepared_statements", what, 8*c.n)
		}
		for _, err := range errs {
			if !strings.Contains(err.Error(), "default_query_exec_mode=cache_describe") || strings.Count(err.Error(), "max_prepared_statements") != 1 {
				t.Errorf("%s: error without the advice, or with it twice: %v", what, err)
			}
		}
	}
}

// concurrently calls read n times on each of 8 goroutines, each stopping
// at its first error, and returns the errors.
func concurrently(n int, read func() error) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range n {
				if err := read(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// TestDefaultExecModeFallsBack: a process started through PgBouncer in
// transaction mode without default_query_exec_mode (a worker whose start
// happened to meet no other client's statement) failed one statement in
// many for as long as it ran, its jobs' outcomes among them, so that jobs
// ran again. Once one of its statements meets the pooler's mark, the
// process makes its connections without named statements, as the URL
// parameter would, and its statements work from then on.
func TestDefaultExecModeFallsBack(t *testing.T) {
	t.Parallel()
	b := bouncertest.StartPool(t, pgtest.URL(t), 1)
	url := pgtest.WithParam(t, strings.Replace(b.URL(), "&"+bouncertest.SafeExecMode, "", 1), "pool_max_conns", "1")
	s, other := openStore(t, url), openStore(t, url)
	q := pgtest.NewQueue(t, pgtest.Store(t), "bf")
	ctx := pgtest.Context(t)
	var first []error
	for range 20 {
		for _, st := range []*store.Store{s, other} {
			if _, err := st.IsEmpty(ctx, q); err != nil {
				first = append(first, err)
			}
		}
	}
	if len(first) == 0 {
		t.Fatal("no statement failed through PgBouncer in transaction mode with pgx's default exec mode; check the bouncer's max_prepared_statements")
	}
	for _, err := range first {
		if !strings.Contains(err.Error(), "default_query_exec_mode=cache_describe") {
			t.Errorf("error without the advice: %v", err)
		}
	}
	for i := range 100 {
		for _, st := range []*store.Store{s, other} {
			if _, err := st.IsEmpty(ctx, q); err != nil {
				t.Fatalf("read %d after the first %d failed, on statements the pooler does not keep: %v", i, len(first), err)
			}
		}
	}
}
