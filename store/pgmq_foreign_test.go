package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A schema pgmq that neither PGMQ nor pgbus made stops migrate and the
// schema check before anything is written, naming what was found.
func TestForeignPGMQSchemaIsRefusedEarly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, setup string
		found       []string
	}{
		{"tables without meta", `CREATE SCHEMA pgmq; CREATE TABLE pgmq.jobs (id int); CREATE FUNCTION pgmq.enqueue() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
			[]string{"table pgmq.jobs", "function pgmq.enqueue", "no table pgmq.meta"}},
		{"meta of another shape", `CREATE SCHEMA pgmq; CREATE TABLE pgmq.meta (key text PRIMARY KEY, value jsonb)`,
			[]string{"(key text, value jsonb)", "queue_name character varying"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			url := pgtest.NewDatabase(t)
			pgtest.Exec(t, url, c.setup)
			s, err := store.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for what, call := range map[string]func() error{
				"migrate":      func() error { _, err := s.Migrate(ctx); return err },
				"check schema": func() error { _, err := s.CheckSchema(ctx); return err },
			} {
				err := call()
				if !errors.Is(err, store.ErrForeignPGMQSchema) {
					t.Fatalf("%s = %v, want ErrForeignPGMQSchema", what, err)
				}
				for _, want := range append(c.found, "neither PGMQ's nor pgbus's", "ALTER SCHEMA pgmq RENAME") {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("%s error %q does not say %q", what, err, want)
					}
				}
			}
			if n := pgtest.Int(t, s, `SELECT count(*) FROM pg_namespace WHERE nspname = 'pgbus'`); n != 0 {
				t.Fatalf("migrate wrote schema pgbus before refusing")
			}
			// Moved out of the way as the error says, migrate works.
			pgtest.Exec(t, url, `ALTER SCHEMA pgmq RENAME TO theirs`)
			if _, err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate after renaming the schema: %v", err)
			}
		})
	}
}

// An empty schema pgmq (made ahead by hand, or by a tool's setup) is fine.
func TestEmptyPGMQSchemaIsUsed(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	pgtest.Exec(t, url, `CREATE SCHEMA pgmq`)
	s := pgtest.OpenStore(t, url)
	if err := s.CreateQueue(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.meta`); n != 2 {
		t.Fatalf("pgmq.meta has %d rows, want orders and orders_dlq", n)
	}
}
