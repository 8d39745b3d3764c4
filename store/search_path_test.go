package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// migratedWithSchema returns the URL of a database of the test's own,
// migrated, with schema ext made by sql, and the names of the database
// and of the role the test connects as.
func migratedWithSchema(t *testing.T, sql string) (url, db, role string) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	conn := connect(t, url, "")
	if _, err := conn.Exec(testContext(t), `CREATE SCHEMA ext; `+sql); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(testContext(t), `SELECT current_database(), session_user`).Scan(&db, &role); err != nil {
		t.Fatal(err)
	}
	return url, db, role
}

// setPath gives role search_path path on database db, as a DBA would.
func setPath(t *testing.T, url, db, role, path string) {
	t.Helper()
	sql := "ALTER ROLE " + pgx.Identifier{role}.Sanitize() + " IN DATABASE " + pgx.Identifier{db}.Sanitize() + " SET search_path = " + path
	if _, err := connect(t, url, "").Exec(testContext(t), sql); err != nil {
		t.Fatal(err)
	}
}

// openChecked opens a store on url and checks its schema, then migrates.
func openChecked(t *testing.T, url string) (checkErr, migrateErr error) {
	t.Helper()
	s, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, checkErr = s.CheckSchema(testContext(t))
	_, migrateErr = s.Migrate(testContext(t))
	return checkErr, migrateErr
}

// A role whose search_path looks in a schema before pg_catalog that holds
// functions and operators named as PostgreSQL's is refused at the schema
// check, and by Migrate, with what would go wrong and the setting that
// puts pg_catalog first. The schema's own = on names does not hide them
// from the check.
func TestShadowingSearchPathIsRefused(t *testing.T) {
	url, db, role := migratedWithSchema(t, `
		CREATE FUNCTION ext.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$;
		CREATE FUNCTION ext.md5(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000000000000000000000000000'::text $$;
		CREATE FUNCTION ext.never(name, name) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT false $$;
		CREATE OPERATOR ext.= (LEFTARG = name, RIGHTARG = name, FUNCTION = ext.never);
		CREATE FUNCTION ext.mine() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`)
	setPath(t, url, db, role, "ext, pg_catalog, public")

	checkErr, migrateErr := openChecked(t, url)
	for what, err := range map[string]error{"CheckSchema": checkErr, "Migrate": migrateErr} {
		if !errors.Is(err, store.ErrShadowingSearchPath) {
			t.Errorf("%s under search_path ext, pg_catalog, public: %v; want ErrShadowingSearchPath", what, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{
			"search_path (ext, pg_catalog, public)", "schema ext before pg_catalog",
			"ext.clock_timestamp", "ext.md5", "operator ext.=", "times", "group dead letters",
			"ALTER ROLE " + pgx.Identifier{role}.Sanitize() + " IN DATABASE " + pgx.Identifier{db}.Sanitize() + " SET search_path = pg_catalog, ext, public",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s's error does not say %q: %s", what, want, msg)
			}
		}
		if strings.Contains(msg, "ext.mine") {
			t.Errorf("%s's error names ext.mine, which shadows nothing: %s", what, msg)
		}
	}
}

// A search_path asked for at connection overrides the role's settings:
// the refusal says to change it there.
func TestShadowingSearchPathOfTheURLIsRefused(t *testing.T) {
	url, _, _ := migratedWithSchema(t, `CREATE FUNCTION ext.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '2000-01-01'::timestamptz $$`)
	checkErr, _ := openChecked(t, pgtest.WithParam(t, url, "search_path", "ext,pg_catalog"))
	if !errors.Is(checkErr, store.ErrShadowingSearchPath) {
		t.Fatalf("CheckSchema under a URL's search_path ext,pg_catalog: %v; want ErrShadowingSearchPath", checkErr)
	}
	if msg := checkErr.Error(); !strings.Contains(msg, "ext.now") || !strings.Contains(msg, "the database URL's options or search_path parameter") ||
		!strings.Contains(msg, "search_path = pg_catalog, ext") || strings.Contains(msg, "ALTER ROLE") {
		t.Errorf("the refusal does not name ext.now and the URL's setting to change: %s", msg)
	}
}

// A search_path that lists pg_catalog after a schema holding nothing
// named as PostgreSQL's functions is accepted, and so is the default
// path, which looks in pg_catalog first whatever public holds.
func TestSearchPathWithoutShadowsIsAccepted(t *testing.T) {
	url, db, role := migratedWithSchema(t, `
		CREATE FUNCTION ext.mine() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
		CREATE FUNCTION public.md5(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000000000000000000000000000'::text $$`)
	checkErr, migrateErr := openChecked(t, url)
	if checkErr != nil || migrateErr != nil {
		t.Errorf("the default search_path, with a public.md5: CheckSchema %v, Migrate %v; want both accepted", checkErr, migrateErr)
	}
	setPath(t, url, db, role, "ext, pg_catalog, public")
	checkErr, migrateErr = openChecked(t, url)
	if checkErr != nil || migrateErr != nil {
		t.Errorf("search_path ext, pg_catalog, public, ext shadowing nothing: CheckSchema %v, Migrate %v; want both accepted", checkErr, migrateErr)
	}
}

// A session under session_replication_role = replica, which a superuser
// may set for a role or database, fires none of the triggers that count
// dead letters: every dead letter would be missing from the summary,
// health, metrics and alerts. It is refused at the schema check, and by
// Migrate, naming the setting and the statement that resets it where it
// is set.
func TestReplicaSessionReplicationRoleIsRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := newQueue(t, s)
	var db string
	if err := s.Pool().QueryRow(testContext(t), `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET session_replication_role = 'replica'")

	checkErr, migrateErr := openChecked(t, url)
	for what, err := range map[string]error{"CheckSchema": checkErr, "Migrate": migrateErr} {
		if !errors.Is(err, store.ErrSessionSettings) {
			t.Errorf("%s under session_replication_role = replica: %v; want ErrSessionSettings", what, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"session_replication_role is replica", "triggers", "ALTER DATABASE " + pgx.Identifier{db}.Sanitize() + " RESET session_replication_role"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s's error does not say %q: %s", what, want, msg)
			}
		}
	}

	// Reset, the same database works again, its dead letters counted.
	pgtest.Exec(t, url, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" RESET session_replication_role")
	if checkErr, migrateErr := openChecked(t, url); checkErr != nil || migrateErr != nil {
		t.Fatalf("after the reset: CheckSchema %v, Migrate %v; want both accepted", checkErr, migrateErr)
	}
	pgtest.DeadLetter(t, pgtest.OpenStore(t, url), q, pgtest.DeadSpec{Message: "boom"})
	groups, err := s.SummarizeDead(testContext(t), store.DeadFilter{Queue: q})
	if err != nil || len(groups) != 1 || groups[0].Count != 1 {
		t.Fatalf("summary %+v, %v; want the one dead letter counted", groups, err)
	}
}
