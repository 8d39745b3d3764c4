package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A program whose role's search_path puts a schema's now() in place of
// PostgreSQL's is stopped by Run before any worker starts: every time its
// workers wrote would have been that function's.
func TestRunRefusesAShadowingSearchPath(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	q := pgtest.NewFastQueue(t, s, "path", nil)
	pgtest.Exec(t, url, `CREATE SCHEMA ext;
		CREATE FUNCTION ext.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '2000-01-01 00:00:00+00'::timestamptz $$`)
	shadowed, err := store.Open(testContext(t), pgtest.WithParam(t, url, "search_path", "ext,pg_catalog"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shadowed.Close)
	c := pgtest.NewClient(t, shadowed, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	if err := c.Run(testContext(t)); !errors.Is(err, store.ErrShadowingSearchPath) {
		t.Fatalf("Run under search_path ext,pg_catalog with an ext.now(): %v; want ErrShadowingSearchPath", err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.workers`); n != 0 {
		t.Fatalf("Run registered %d worker processes before refusing", n)
	}
}
