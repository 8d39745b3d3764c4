package store_test

import (
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A Store OpenLazyFrom made takes each new connection's address and login
// from its source as it is then, not from the URL it was opened with: the
// pool's connections and the listener's alike, and User follows; a source
// that cannot give one fails the connection saying so, in advice that
// names nothing of the database.
func TestOpenLazyFromReadsTheURLForEachNewConnection(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dbURL := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, dbURL)
	role, roleURL := pgtest.NewRole(t, dbURL)
	// The URL opened with names a database that does not exist: only
	// the source's reaches one.
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/pgbus_no_such_database"
	var mu sync.Mutex
	var broken error
	source := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return roleURL, broken
	}
	st, err := store.OpenLazyFrom(u.String(), "", source)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var user string
	if err := st.Pool().QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil || user != role || st.User() != role {
		t.Fatalf("connected as %q (%v), User %q; want the source's role %q", user, err, st.User(), role)
	}
	l, err := st.Listen(ctx)
	if err != nil {
		t.Fatalf("Listen: %v; want it to connect with the source's URL", err)
	}
	_ = l.Close(ctx)

	mu.Lock()
	broken = errors.New("the file is gone")
	mu.Unlock()
	st.Pool().Reset()
	err = st.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "the file is gone") || !strings.Contains(err.Error(), "read the database URL again") {
		t.Fatalf("Ping with a source that fails: %v; want its error, said to be of reading the URL again", err)
	}
	if advice := store.Advice(err); !strings.Contains(advice, "could not be read again") || strings.Contains(advice, role) {
		t.Errorf("Advice: %q; want it to say the URL could not be read again, naming no role", advice)
	}
}
