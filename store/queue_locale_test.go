package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A server that speaks German (lc_messages, as a DBA sets it for a
// German-speaking team) words "relation does not exist" as
// »Relation »pgmq.a_arcq« existiert nicht«: which table is missing is
// decided by the SQLSTATE and by asking the catalog, not by the words, so
// a queue whose archive was dropped is not said to be missing itself.
func TestArchiveMissingSaidSoInAnyLanguage(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabaseSet(t, "lc_messages", "de_DE.UTF-8")
	s := pgtest.OpenStore(t, url)
	ctx := pgtest.Context(t)
	var msg string
	if err := s.Pool().QueryRow(ctx, `SELECT 1 FROM pgmq.no_such_table`).Scan(new(int)); err == nil {
		t.Fatal("a select from a missing table worked")
	} else {
		msg = err.Error()
	}
	if !strings.Contains(msg, "existiert nicht") {
		t.Skipf("the server does not word its messages in German (%s): it was built without them", msg)
	}
	if err := s.CreateQueue(ctx, "arcq"); err != nil {
		t.Fatal(err)
	}
	id, err := s.Send(ctx, "arcq", store.NewMessage{Payload: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `ALTER TABLE pgmq.a_arcq RENAME TO a_arcq_old`)
	_, err = s.Archive(ctx, "arcq", id)
	var missing *store.ArchiveMissingError
	if !errors.As(err, &missing) || missing.Queue != "arcq" || !strings.Contains(err.Error(), `queue "arcq" has no archive table (pgmq.a_arcq was dropped`) {
		t.Fatalf("archive with the archive table renamed, messages in German: %v; want it said that the archive is missing", err)
	}

	// The queue gone too: then it is the queue that does not exist.
	pgtest.Exec(t, url, `DROP TABLE pgmq.q_arcq`)
	_, err = s.Archive(ctx, "arcq", id)
	if !errors.Is(err, store.ErrNotFound) || errors.As(err, &missing) || !strings.Contains(err.Error(), `queue "arcq" does not exist`) {
		t.Fatalf("archive with the queue's table dropped: %v; want the queue said not to exist", err)
	}
}
