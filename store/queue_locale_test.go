package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	url := germanDatabase(t)
	s := pgtest.OpenStore(t, url)
	ctx := pgtest.Context(t)
	var msg string
	if err := s.Pool().QueryRow(ctx, `SELECT 1 FROM pgmq.no_such_table`).Scan(new(int)); err == nil {
		t.Fatal("a select from a missing table worked")
	} else {
		msg = err.Error()
	}
	if !strings.Contains(msg, "existiert nicht") {
		t.Fatalf("the server does not word its messages in German (%s), though its system has the de_DE.UTF-8 locale: it was built without translations; run the tests on a PostgreSQL built with them (Debian's postgresql packages are)", msg)
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

// germanDatabase is a new database whose sessions get their messages in
// German, or the test's failure saying how to give the server that locale.
func germanDatabase(t *testing.T) string {
	t.Helper()
	url := pgtest.NewDatabase(t)
	ctx := pgtest.Context(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET lc_messages = ''de_DE.UTF-8''', current_database()); END $$`)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "22023" { // invalid_parameter_value
		t.Fatalf("the test server's system has no de_DE.UTF-8 locale to word its messages in German (%v): generate it as root, on Debian with localedef -i de_DE -c -f UTF-8 de_DE.UTF-8 (from the locales package), as .ci/run does", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return url
}
