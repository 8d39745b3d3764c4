package pgtest

import (
	"os"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// templates are the template databases of this test binary, by key;
// Main drops them once the tests have run.
var templates struct {
	mu  sync.Mutex
	all map[string]*template
}

type template struct {
	once  sync.Once
	name  string // the database, once made
	built bool   // build returned without failing its test
}

// FromTemplate returns a new database, dropped when the test ends, that
// is a copy of the template database of key: the first test to ask for
// key makes the template, an empty migrated database that build fills
// through its URL, and the tests after it wait for that and copy it
// (CREATE DATABASE ... TEMPLATE, a copy of its files) rather than fill a
// database of their own. Use it where several tests need the same costly
// contents, such as hundreds of queues. build must close every connection
// it opened before it returns, as a template cannot be copied while a
// session is connected to it; a template build that failed fails every
// test that asks for it.
func FromTemplate(tb testing.TB, key string, build func(tb testing.TB, url string)) string {
	tb.Helper()
	templates.mu.Lock()
	if templates.all == nil {
		templates.all = map[string]*template{}
	}
	tpl := templates.all[key]
	if tpl == nil {
		tpl = &template{}
		templates.all[key] = tpl
	}
	templates.mu.Unlock()
	tpl.once.Do(func() {
		tpl.name = Name("pgbus_tpl")
		Exec(tb, URL(tb), "CREATE DATABASE "+tpl.name)
		url := withDatabase(tb, URL(tb), tpl.name)
		migrate(tb, url)
		build(tb, url) // a build that fails its test ends here, built false
		tpl.built = true
	})
	if !tpl.built {
		tb.Fatalf("pgtest: the template database %q could not be made: see the test that made it", key)
	}
	return newDatabase(tb, " TEMPLATE "+tpl.name)
}

// migrate migrates the database at url, leaving no connection open.
func migrate(tb testing.TB, url string) {
	tb.Helper()
	s, err := store.Open(Context(tb), url)
	if err != nil {
		tb.Fatalf("pgtest: open a store: %v", err)
	}
	defer s.Close()
	if _, err := s.Migrate(Context(tb)); err != nil {
		tb.Fatalf("pgtest: migrate: %v", err)
	}
}

// dropTemplates drops the template databases of this test binary.
func dropTemplates() error {
	templates.mu.Lock()
	defer templates.mu.Unlock()
	var names []string
	for _, t := range templates.all {
		if t.name != "" {
			names = append(names, t.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	base := os.Getenv(EnvURL)
	if base == "" {
		mu.Lock()
		if cluster != nil {
			base = cluster.URL()
		}
		mu.Unlock()
	}
	drops := make([]string, len(names))
	for i, name := range names {
		drops[i] = "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"
	}
	return execEach(base, "drop the template databases", drops...)
}
