package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A read of every DLQ that PostgreSQL fails because a relation it had
// found was dropped while the statement ran (SQLSTATE XX000, "could not
// open relation with OID"), not before it (42P01), is read again over the
// DLQs there are then, as a DLQ dropped before the read is; the error is
// told by its code and the catalog, not by its words, which lc_messages
// translates (here in German). The same error with no DLQ gone is no
// change of the queues: it is returned as it is, read once.
func TestReadOfEveryDLQAgainWhenOneIsDroppedWhileItRuns(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it reads every DLQ, and drops one
	ctx := testContext(t)
	kept, dropped := newQueue(t, s), newQueue(t, s)
	// As PostgreSQL fails a statement whose relation went under it.
	gone := func() error {
		_, err := s.Pool().Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'XX000', MESSAGE = 'konnte Relation mit OID 424242 nicht öffnen'; END $$`)
		return err
	}

	var reads [][]string
	err := store.RunDead(ctx, s, store.DeadFilter{}, func(dlqs []string) error {
		reads = append(reads, dlqs)
		if len(reads) > 1 {
			return nil
		}
		if err := s.DropQueue(ctx, dropped); err != nil {
			t.Fatal(err)
		}
		return gone()
	})
	if err != nil || len(reads) != 2 || !slices.Contains(reads[0], store.DLQName(dropped)) ||
		slices.Contains(reads[1], store.DLQName(dropped)) || !slices.Contains(reads[1], store.DLQName(kept)) {
		t.Fatalf("a read of every DLQ failed as one went under it: reads of %v, %v; want a second read without %s's DLQ", reads, err, dropped)
	}

	reads = nil
	err = store.RunDead(ctx, s, store.DeadFilter{}, func(dlqs []string) error {
		reads = append(reads, dlqs)
		return gone()
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "XX000" || errors.As(err, new(*store.QueuesChangedError)) || len(reads) != 1 {
		t.Fatalf("a read of every DLQ failed as an internal error with every DLQ there: %d reads, %v; want one read, its error as it is", len(reads), err)
	}
}
