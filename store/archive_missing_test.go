package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue whose archive table was dropped or renamed by hand is not said
// to be missing itself: its messages are there, and the error names the
// archive and the create that makes it again.
func TestArchiveMissingIsSaidSo(t *testing.T) {
	t.Parallel()
	s := pgtest.Store(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, s, "noarch")
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pgtest.URL(t), `ALTER TABLE pgmq."a_`+q+`" RENAME TO "a_`+q+`_old"`)
	_, err = s.Archive(ctx, q, id)
	var missing *store.ArchiveMissingError
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "has no archive table (pgmq.a_"+q) ||
		!errors.As(err, &missing) || missing.Queue != q || strings.Contains(err.Error(), "pgbus queue") {
		t.Fatalf("archive with the archive table gone: %v; want it said, with the create that makes it again", err)
	}
	if n := pgtest.Live(t, s, q); n != 1 {
		t.Fatalf("%d messages in the queue after the refused archive, want the one sent", n)
	}
}
