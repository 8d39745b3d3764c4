package store_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue dropped and made again under its name hands out ids after the
// highest the name had, its DLQ's and its levels' too: a new job with an
// old job's id would carry its default idempotency key ("<queue>:<id>"),
// which a downstream that de-duplicates takes for a repeat, and an old
// DLQ id would name another message. What it was sent counts its own
// messages alone.
func TestQueueMadeAgainContinuesItsIDs(t *testing.T) {
	t.Parallel()
	checkIDsContinue(t, testStore(t))
}

// The same with PGMQ's functions installed, which create and drop the
// queue's tables.
func TestQueueMadeAgainContinuesItsIDsWithPGMQ(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script on a fresh database: %v", err)
	}
	s := openStore(t, url)
	if st, err := s.Migrate(testContext(t)); err != nil || !st.PGMQFunctions {
		t.Fatalf("migrate after PGMQ = %+v, %v; want PGMQ's functions found", st, err)
	}
	checkIDsContinue(t, s)
}

func checkIDsContinue(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := testContext(t)
	q := newQueue(t, s)
	dead := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	sent := sendN(t, s, q, 2)
	levels := uniqueName("lv")
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(ctx, levels) })
	level := store.PriorityQueueName(levels, 1)
	onLevel := sendN(t, s, level, 4)

	for _, name := range []string{q, levels} {
		if err := s.DropQueue(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	checkSent(t, s, "before any send", map[string]int64{q: 0, levels: 0})
	if got := sendN(t, s, q, 1)[0]; got <= sent[len(sent)-1] {
		t.Errorf("queue %s made again gave its first message id %d; the old one reached %d", q, got, sent[len(sent)-1])
	}
	if got := deadN(t, s, q, 1, "k", "Timeout", store.ReasonMaxRetriesExceeded)[0]; got <= dead[len(dead)-1] {
		t.Errorf("the DLQ of %s made again gave its first message id %d; the old one reached %d", q, got, dead[len(dead)-1])
	}
	if got := sendN(t, s, level, 1)[0]; got <= onLevel[len(onLevel)-1] {
		t.Errorf("level %s made again gave its first message id %d; the old one reached %d", level, got, onLevel[len(onLevel)-1])
	}
	checkSent(t, s, "after its sends", map[string]int64{q: 2, levels: 1})
	if m, err := s.Metrics(ctx, q); err != nil || m.TotalSent != 2 {
		t.Errorf("metrics of %s made again = %+v, %v; want 2 sent", q, m, err)
	}
	// Emptied to no block at all, as a purge leaves it, its table is read
	// without planning a statement over it: the count stays.
	if _, err := s.PurgeQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Int(t, s, `SELECT pg_relation_size('pgmq."q_`+q+`"') + pg_relation_size('pgmq."a_`+q+`"')`); n != 0 {
		t.Fatalf("queue %s purged holds %d bytes; the test wants none", q, n)
	}
	checkSent(t, s, "once purged", map[string]int64{q: 2})

	// A queue never dropped counts from its first id, as ever.
	fresh := newQueue(t, s)
	if got := sendN(t, s, fresh, 3); got[0] != 1 {
		t.Errorf("a new queue's first id = %d, want 1", got[0])
	}
	checkSent(t, s, "of a queue never dropped", map[string]int64{fresh: 3})
}

// checkSent checks what each queue of want was sent, as QueueStats reads
// it with and without the archive.
func checkSent(t *testing.T, s *store.Store, when string, want map[string]int64) {
	t.Helper()
	for _, opts := range []store.QueueStatsOptions{{TotalSent: true}, {Archive: true}} {
		for q, n := range want {
			stats, err := s.QueueStats(testContext(t), q, opts)
			if err != nil || len(stats) != 1 {
				t.Fatalf("stats of %s: %+v, %v", q, stats, err)
			}
			if stats[0].TotalSent != n {
				t.Errorf("%s, %+v: %s was sent %d, want %d", when, opts, q, stats[0].TotalSent, n)
			}
		}
	}
}

// A queue whose tables another client dropped (as pgmq.drop_queue does),
// made again by pgbus, starts after the highest id pgbus's records of its
// messages hold: their failures, idempotency keys, the archive left
// behind, and the dead messages of its DLQ, whose retries keep their
// default keys.
func TestQueueDroppedOutsideContinuesAfterItsRecords(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)

	keyed := newQueue(t, s)
	sendN(t, s, keyed, 5)
	last, err := s.Send(ctx, keyed, store.NewMessage{Payload: json.RawMessage(`{}`), IdempotencyKey: "k-1"})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, keyed)
	if err := s.CreateQueue(ctx, keyed); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, keyed, 1)[0]; got <= last {
		t.Errorf("queue %s made again after a drop outside pgbus gave id %d; its key held id %d", keyed, got, last)
	}

	withDead := newQueue(t, s)
	dead := deadN(t, s, withDead, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	pgtest.DropOutside(t, s, withDead)
	if err := s.CreateQueue(ctx, withDead); err != nil {
		t.Fatal(err)
	}
	var source int64
	if err := s.Pool().QueryRow(ctx, `SELECT max((headers->'pgbus_dead_letter'->>'source_msg_id')::bigint) FROM pgmq."q_`+store.DLQName(withDead)+`"`).Scan(&source); err != nil || source < int64(len(dead)) {
		t.Fatalf("highest source id of the dead messages = %d, %v", source, err)
	}
	if got := sendN(t, s, withDead, 1)[0]; got <= source {
		t.Errorf("queue %s made again beside its DLQ gave id %d; its dead messages came from ids up to %d", withDead, got, source)
	}

	// Dropped by pgbus once its table went outside it, the DLQ with it:
	// the drop notes what is left.
	gone := newQueue(t, s)
	goneDead := deadN(t, s, gone, 2, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	pgtest.DropOutside(t, s, gone)
	if err := s.DropQueue(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, gone, 1)[0]; got <= 2 {
		t.Errorf("queue %s, its table dropped outside pgbus, then dropped and made again by pgbus, gave id %d; its dead messages came from ids up to 2", gone, got)
	}
	if got := deadN(t, s, gone, 1, "k", "Timeout", store.ReasonMaxRetriesExceeded)[0]; got <= goneDead[len(goneDead)-1] {
		t.Errorf("the DLQ of %s made again gave id %d; the old one reached %d", gone, got, goneDead[len(goneDead)-1])
	}

	archived := newQueue(t, s)
	ids := sendN(t, s, archived, 4)
	if _, err := s.Pool().Exec(ctx, `WITH m AS (DELETE FROM pgmq."q_`+archived+`" RETURNING *)
		INSERT INTO pgmq."a_`+archived+`" (msg_id, read_ct, enqueued_at, vt, message, headers) SELECT msg_id, read_ct, enqueued_at, vt, message, headers FROM m`); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, s.Pool().Config().ConnString(), `DROP TABLE pgmq."q_`+archived+`"`)
	if err := s.CreateQueue(ctx, archived); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, archived, 1)[0]; got <= ids[len(ids)-1] {
		t.Errorf("queue %s made again beside its archive gave id %d; the archive holds ids up to %d", archived, got, ids[len(ids)-1])
	}
}

// A queue made again by a pgbus whose database lacks the migration that
// notes dropped queues' ids works as before it: its ids start again;
// once migrated, a drop notes them.
func TestQueueMadeAgainBeforeItsIDsAreNoted(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, _ := storeAtVersion(t, 32)
	q := uniqueName("q")
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	sendN(t, s, q, 3)
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatalf("create a queue again before its ids are noted: %v", err)
	}
	if got := sendN(t, s, q, 1)[0]; got != 1 {
		t.Errorf("first id of %s made again before the migration = %d, want 1", q, got)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, q, 1)[0]; got != 2 {
		t.Errorf("first id of %s made again after the migration = %d, want 2", q, got)
	}
}

// What a queue made again was sent counts its own messages alone for
// every role that reads it: one granted the read grants before the
// migration that notes dropped queues' ids, and one that may read the
// tables but not the id sequences.
func TestQueueMadeAgainCountsItsOwnSendsForEveryRole(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url, _ := databaseAtVersion(t, 32)
	owner := openStore(t, url)
	reader, readerURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, store.ReadGrants(reader))
	tablesOnly, tablesOnlyURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+tablesOnly+"; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+tablesOnly+
		"; ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON TABLES TO "+tablesOnly)
	if _, err := owner.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// The default privileges the read grants gave cover the tables a
	// migration makes later.
	if n := pgtest.Int(t, owner, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'pgbus' AND c.relkind = 'r' AND NOT has_table_privilege($1, c.oid, 'SELECT')`, reader); n != 0 {
		t.Errorf("%d tables of schema pgbus are not readable by a role given the read grants before they were made", n)
	}

	q := uniqueName("q")
	if err := owner.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.DropQueue(ctx, q) })
	sendN(t, owner, q, 5)
	if err := owner.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := owner.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	roles := map[string]*store.Store{"the owner": owner, "a reader": openStore(t, readerURL), "a reader of the tables alone": openStore(t, tablesOnlyURL)}
	for who, s := range roles {
		checkSent(t, s, who+", before any send", map[string]int64{q: 0})
	}
	if got := sendN(t, owner, q, 2); got[0] != 6 {
		t.Errorf("first id of %s made again = %d, want 6", q, got[0])
	}
	for who, s := range roles {
		checkSent(t, s, who+", after two sends", map[string]int64{q: 2})
	}
}

func sendN(t *testing.T, s *store.Store, queue string, n int) []int64 {
	t.Helper()
	batch := make([]store.NewMessage, n)
	for i := range batch {
		batch[i] = store.NewMessage{Payload: json.RawMessage(`{}`)}
	}
	ids, err := s.SendBatch(testContext(t), queue, batch)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A drop notes the highest id of each physical queue that handed one
// out, and nothing of those that handed none out (a DLQ that never held
// a message, a level never sent to): a note of no id says nothing a
// queue made again under the name needs, and would stay for ever.
// Retention deletes such notes an older version wrote, and keeps every
// other.
func TestDropNotesOnlyTheIDsItHandedOut(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // a database of its own: retention reads every note
	ctx := testContext(t)
	q := newQueue(t, s)
	sent := sendN(t, s, q, 2)
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	notes := func() string {
		t.Helper()
		var got string
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(queue_name || '=' || last_id, ' ' ORDER BY queue_name COLLATE "C"), '')
			FROM pgbus.queue_id_floors`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := fmt.Sprintf("%s=%d", q, sent[len(sent)-1])
	if got := notes(); got != want {
		t.Errorf("ids noted by the drop of %s, whose DLQ held nothing: %q; want %q", q, got, want)
	}
	exec(t, s, `INSERT INTO pgbus.queue_id_floors (queue_name, last_id) VALUES ('never_sent', 0), ('never_sent_dlq', 0)`)
	rep, err := s.RunRetention(ctx, 1000, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	if got := notes(); got != want || rep.IDFloorsDeleted != 2 {
		t.Errorf("ids noted after retention: %q, %d deleted; want %q, the 2 notes of no id deleted", got, rep.IDFloorsDeleted, want)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := sendN(t, s, q, 1)[0]; got != sent[len(sent)-1]+1 {
		t.Errorf("queue %s made again gave id %d; want %d, after the old ones", q, got, sent[len(sent)-1]+1)
	}
}
