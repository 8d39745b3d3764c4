package store_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgbus/pgbus/store"
)

// The pgmq extension cannot be installed in every test environment, so these
// tests hold the store to the layout column for column and speak to it with
// the statements PGMQ's own send, read and archive functions run.

type column struct {
	Name, Type, Nullable, Default, Identity string
}

func columns(t *testing.T, s *store.Store, table string) []column {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `
		SELECT column_name, data_type, is_nullable, coalesce(column_default, ''), coalesce(identity_generation, '')
		FROM information_schema.columns
		WHERE table_schema = 'pgmq' AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLayoutMatchesPGMQ(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	wantQueue := []column{
		{"msg_id", "bigint", "NO", "", "ALWAYS"},
		{"read_ct", "integer", "NO", "0", ""},
		{"enqueued_at", "timestamp with time zone", "NO", "now()", ""},
		{"vt", "timestamp with time zone", "NO", "", ""},
		{"message", "jsonb", "YES", "", ""},
		{"headers", "jsonb", "YES", "", ""},
	}
	wantArchive := []column{
		{"msg_id", "bigint", "NO", "", ""},
		{"read_ct", "integer", "NO", "0", ""},
		{"enqueued_at", "timestamp with time zone", "NO", "now()", ""},
		{"archived_at", "timestamp with time zone", "NO", "now()", ""},
		{"vt", "timestamp with time zone", "NO", "", ""},
		{"message", "jsonb", "YES", "", ""},
		{"headers", "jsonb", "YES", "", ""},
	}
	for _, name := range []string{q, q + "_dlq"} {
		if got := columns(t, s, "q_"+name); !slices.Equal(got, wantQueue) {
			t.Fatalf("pgmq.q_%s columns:\n got %v\nwant %v", name, got, wantQueue)
		}
		if got := columns(t, s, "a_"+name); !slices.Equal(got, wantArchive) {
			t.Fatalf("pgmq.a_%s columns:\n got %v\nwant %v", name, got, wantArchive)
		}
	}
	meta := columns(t, s, "meta")
	wantMeta := []column{
		{"queue_name", "character varying", "NO", "", ""},
		{"is_partitioned", "boolean", "NO", "", ""},
		{"is_unlogged", "boolean", "NO", "", ""},
		{"created_at", "timestamp with time zone", "NO", "now()", ""},
	}
	if !slices.Equal(meta, wantMeta) {
		t.Fatalf("pgmq.meta columns:\n got %v\nwant %v", meta, wantMeta)
	}
	var indexes []string
	rows, err := s.Pool().Query(testContext(t), `SELECT indexname FROM pg_indexes WHERE schemaname = 'pgmq' AND tablename IN ($1, $2) ORDER BY indexname`, "q_"+q, "a_"+q)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a_" + q + "_pkey", "archived_at_idx_" + q, "q_" + q + "_pkey", "q_" + q + "_vt_idx"}
	if !slices.Equal(indexes, want) {
		t.Fatalf("indexes = %v, want %v", indexes, want)
	}
}

// A message written as pgmq.send writes it is read and archived by the store.
func TestStoreReadsWhatPGMQSendWrites(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	var id int64
	err := s.Pool().QueryRow(ctx,
		`INSERT INTO pgmq."q_`+q+`" (vt, message, headers) VALUES (clock_timestamp() + make_interval(secs => 0), $1, $2) RETURNING msg_id`,
		`{"from":"pgmq.send"}`, `{"x-pgmq-group":"g"}`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, q, secondVT, 5)
	if err != nil || len(got) != 1 || got[0].ID != id || string(got[0].Payload) != `{"from": "pgmq.send"}` {
		t.Fatalf("store read = %+v, %v; want message %d", got, err, id)
	}
	if ok, err := s.Archive(ctx, q, id); err != nil || !ok {
		t.Fatalf("archive = %v, %v", ok, err)
	}
	var readCt int
	var archivedAt time.Time
	err = s.Pool().QueryRow(ctx, `SELECT read_ct, archived_at FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id).Scan(&readCt, &archivedAt)
	if err != nil || readCt != 1 || archivedAt.IsZero() {
		t.Fatalf("archived row read_ct=%d archived_at=%v (%v)", readCt, archivedAt, err)
	}
}

// A message the store sends is read by the statement pgmq.read runs, on the
// queue and on its DLQ alike.
func TestPGMQReadReadsWhatStoreSends(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	for _, name := range []string{q, q + "_dlq"} {
		id, err := s.Send(ctx, name, store.NewMessage{Payload: json.RawMessage(`{"from":"store"}`), Headers: json.RawMessage(`{"pgbus_kind":"k"}`)})
		if err != nil {
			t.Fatal(err)
		}
		var gotID int64
		var readCt int
		var message, headers string
		err = s.Pool().QueryRow(ctx, `
			WITH cte AS (
				SELECT msg_id FROM pgmq."q_`+name+`"
				WHERE vt <= clock_timestamp() ORDER BY msg_id ASC LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE pgmq."q_`+name+`" m SET vt = clock_timestamp() + make_interval(secs => $2), read_ct = read_ct + 1
			FROM cte WHERE m.msg_id = cte.msg_id
			RETURNING m.msg_id, m.read_ct, m.message::text, m.headers::text`, 1, 30).Scan(&gotID, &readCt, &message, &headers)
		if err != nil || gotID != id || readCt != 1 || message != `{"from": "store"}` || headers != `{"pgbus_kind": "k"}` {
			t.Fatalf("pgmq.read on %s = %d %d %s %s (%v); want message %d", name, gotID, readCt, message, headers, err, id)
		}
	}
}

// Newer PGMQ versions add last_read_at; the store sets and archives it where
// the column exists.
func TestLastReadAtColumnWhenPresent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := uniqueName("lra")
	t.Cleanup(func() { _ = s.DropQueue(ctx, q) })
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	_, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+q+`" ADD COLUMN last_read_at timestamptz; ALTER TABLE pgmq."a_`+q+`" ADD COLUMN last_read_at timestamptz`)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Send(ctx, q, msg(`1`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, q, secondVT, 1)
	if err != nil || len(got) != 1 || got[0].LastReadAt == nil {
		t.Fatalf("read = %+v, %v; want last_read_at set", got, err)
	}
	if _, err := s.Archive(ctx, q, id); err != nil {
		t.Fatal(err)
	}
	var archived *time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT last_read_at FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id).Scan(&archived); err != nil {
		t.Fatal(err)
	}
	if archived == nil || !archived.Equal(*got[0].LastReadAt) {
		t.Fatalf("archived last_read_at = %v, want %v", archived, got[0].LastReadAt)
	}
}

// A queue whose tables an older PGMQ made, without the headers column,
// cannot be read or sent to; the error says how to add the column rather
// than only that it is missing.
func TestQueueWithoutHeadersColumn(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq."q_`+q+`" DROP COLUMN headers`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(ctx, q, time.Minute, 1)
	if err == nil || !strings.Contains(err.Error(), `ALTER TABLE pgmq."q_`+q+`" ADD COLUMN IF NOT EXISTS headers jsonb`) {
		t.Fatalf("read of a queue without headers: %v; want the ALTER TABLE that adds them", err)
	}
}

// The live messages of a queue show each message's kind as workers and
// the DLQ's views read it: a pgbus_kind that is no string is its JSON
// text, an empty one is the kind, and only a missing or null one falls
// back to the payload's job_class.
func TestLiveKindAsWorkersReadIt(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	cases := []struct{ headers, payload, kind string }{
		{`{"pgbus_kind": 5}`, `{}`, "5"},
		{``, `{"job_class": 123}`, "123"},
		{`{"pgbus_kind": ""}`, `{"job_class": "Receipt"}`, ""},
		{`{"pgbus_kind": null}`, `{"job_class": "Receipt"}`, "Receipt"},
		{`{"pgbus_kind": "charge"}`, `{}`, "charge"},
	}
	want := map[int64]string{}
	for _, c := range cases {
		m := store.NewMessage{Payload: json.RawMessage(c.payload)}
		if c.headers != "" {
			m.Headers = json.RawMessage(c.headers)
		}
		id, err := s.Send(ctx, q, m)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = c.kind
	}
	page, err := s.ListLive(ctx, store.LiveFilter{Queue: q}, "", 100)
	if err != nil || len(page.Items) != len(cases) {
		t.Fatalf("live messages = %d, %v", len(page.Items), err)
	}
	for _, it := range page.Items {
		if it.Kind != want[it.MsgID] {
			t.Errorf("message %d (headers %s): kind %q, want %q", it.MsgID, it.Headers, it.Kind, want[it.MsgID])
		}
	}
}
