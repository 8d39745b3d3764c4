package bouncertest_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// TestDefaultExecModeSaysWhatToDo shows why the README asks for
// default_query_exec_mode behind PgBouncer in transaction mode: with pgx's
// default, statement cache, concurrent reads through the pooler meet
// prepared statements of other clients on the server connections they are
// handed, and the error says which parameter to add.
func TestDefaultExecModeSaysWhatToDo(t *testing.T) {
	t.Parallel()
	b := bouncertest.Start(t, pgtest.URL(t))
	url := strings.Replace(b.URL(), "&"+bouncertest.SafeExecMode, "", 1)
	if url == b.URL() {
		t.Fatalf("the bouncer's URL %s does not end in %s", url, bouncertest.SafeExecMode)
	}
	s := openStore(t, url)
	q := pgtest.NewQueue(t, pgtest.Store(t), "bx")
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if _, err := s.IsEmpty(pgtest.Context(t), q); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		t.Fatal("1,600 concurrent reads with pgx's default exec mode through PgBouncer in transaction mode all worked; " +
			"the README's advice rests on their failing: check the bouncer's max_prepared_statements")
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), "default_query_exec_mode=cache_describe") {
			t.Errorf("error without the advice: %v", err)
		}
	}
}
