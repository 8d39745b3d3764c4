package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// QueueInfo describes one physical PGMQ queue, as pgmq.meta lists it.
type QueueInfo struct {
	Name          string    `json:"name"`
	IsPartitioned bool      `json:"is_partitioned"`
	IsUnlogged    bool      `json:"is_unlogged"`
	CreatedAt     time.Time `json:"created_at"`
}

// CreateQueue creates queue name and its dead-letter queue name_dlq, each with
// its PGMQ queue and archive tables. It is idempotent: creating an existing
// queue changes nothing and is not an error.
func (s *Store) CreateQueue(ctx context.Context, name string) error {
	return s.createLogical(ctx, name, 0, nil)
}

// CreateQueueWithSettings is CreateQueue, or CreatePriorityQueue when
// levels is not 0, for queue settings.Queue, that also stores its
// settings, in the same transaction: workers waiting for the queue (one
// dropped to be made again) never find it without them, and read their
// first messages with the defaults.
func (s *Store) CreateQueueWithSettings(ctx context.Context, levels int, settings QueueSettings) error {
	if err := settings.Validate(); err != nil {
		return err
	}
	if levels != 0 {
		if err := checkLevels(settings.Queue, levels); err != nil {
			return err
		}
	}
	return s.createLogical(ctx, settings.Queue, levels, &settings)
}

// MaxPriorities bounds the priority levels of a queue.
const MaxPriorities = 10

// CreatePriorityQueue creates a queue with levels priority levels: physical
// queues name_p0 .. name_p<levels-1>, read p0 first, and one dead-letter
// queue name_dlq. It is idempotent for the same number of levels.
func (s *Store) CreatePriorityQueue(ctx context.Context, name string, levels int) error {
	if err := checkLevels(name, levels); err != nil {
		return err
	}
	return s.createLogical(ctx, name, levels, nil)
}

// checkLevels refuses a number of priority levels out of range.
func checkLevels(name string, levels int) error {
	if levels < 2 || levels > MaxPriorities {
		return invalidf("queue %q: priority levels must be 2 to %d, not %d; use CreateQueue for a queue without priorities", name, MaxPriorities, levels)
	}
	return nil
}

// createLogical creates queue name with levels priority levels and, when
// settings is not nil, stores them, in one transaction.
func (s *Store) createLogical(ctx context.Context, name string, levels int, settings *QueueSettings) error {
	if err := ValidateQueueName(name); err != nil {
		return err
	}
	ext, err := pgmqFunctions(ctx, s.reads)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// Concurrent creates of one name would race in the catalog; a lock
		// per name makes the second wait and then find everything in place.
		if err := lockNames(ctx, tx, "create", queueLocks(name)...); err != nil {
			return err
		}
		if err := refuseLevel(ctx, tx, name, "created"); err != nil {
			return err
		}
		var existing int
		err := tx.QueryRow(ctx, `SELECT priorities FROM pgbus.queues WHERE queue_name = $1`, name).Scan(&existing)
		if err == nil && existing != levels {
			return invalidf("queue %q exists with %s, not %s: create it with %s (what of it was dropped outside pgbus is made again); to change its layout, drop it first, which deletes its messages and its DLQ's", name, levelWords(existing), levelWords(levels), levelWords(existing))
		}
		if err != nil && err != pgx.ErrNoRows {
			return fmt.Errorf("store: create queue %q: %w", name, err)
		}
		if err == pgx.ErrNoRows {
			if err := refuseClashingName(ctx, tx, name); err != nil {
				return err
			}
		}
		if err == pgx.ErrNoRows && levels > 0 {
			if err := refuseTakeover(ctx, tx, name, levels); err != nil {
				return err
			}
		}
		for _, physical := range append(physicalNames(name, levels), DLQName(name)) {
			dlq := DLQName(name)
			if physical == dlq {
				dlq = ""
			}
			if err := createPhysical(ctx, tx, physical, dlq, ext); err != nil {
				return err
			}
		}
		if err == pgx.ErrNoRows {
			_, err = tx.Exec(ctx, `INSERT INTO pgbus.queues (queue_name, priorities) VALUES ($1, $2) ON CONFLICT DO NOTHING`, name, levels)
		} else {
			// Registered without a DLQ, it has one now.
			err = noteDLQMade(ctx, tx, name)
		}
		if err != nil {
			return fmt.Errorf("store: create queue %q: register: %w", name, err)
		}
		if settings != nil {
			_, err = updateSettings(ctx, tx, *settings)
		}
		return err
	})
}

// clashingEndings are the endings PostgreSQL, PGMQ and pgbus give the
// indexes and sequences of a queue's tables (q_orders_pkey,
// q_orders_msg_id_seq, q_orders_vt_idx, q_orders_dlq_cause_idx), which
// share one namespace with the tables: a queue orders_vt_idx, whose table
// is q_orders_vt_idx, clashes with orders' index, made first or after.
var clashingEndings = []string{"_pkey", "_seq", "_idx"}

// NameClashes reports whether a new queue may not take name, for it ends
// as the indexes and sequences of queue tables are named (clashingEndings).
func NameClashes(name string) bool {
	return slices.ContainsFunc(clashingEndings, func(e string) bool { return strings.HasSuffix(name, e) })
}

// refuseClashingName refuses to make a new queue whose name has one of
// clashingEndings. A queue of such a name that exists (made before, or by
// another PGMQ client) is left as it is.
func refuseClashingName(ctx context.Context, tx pgx.Tx, name string) error {
	i := slices.IndexFunc(clashingEndings, func(e string) bool { return strings.HasSuffix(name, e) })
	if i < 0 {
		return nil
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)`, name).Scan(&exists); err != nil || exists {
		return err
	}
	return invalidf("queue name %q ends in %q, as the indexes and sequences of queue tables are named (q_orders_pkey, q_orders_msg_id_seq and q_orders_vt_idx are those of queue orders), which share the tables' namespace: its tables would clash with another queue's; pick a name that does not end in %s",
		name, clashingEndings[i], strings.Join(clashingEndings, ", "))
}

// RegisterQueue records queue, whose tables another PGMQ client made
// (pgmq.create), as a plain queue of pgbus's with the default settings,
// so that settings can be given to it by a role that may write rows but
// not create tables. It is idempotent.
func (s *Store) RegisterQueue(ctx context.Context, name string) error {
	if err := ValidateQueueName(name); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, `INSERT INTO pgbus.queues (queue_name, priorities, dlq_unmade)
		VALUES ($1, 0, to_regclass(format('pgmq.%I', 'q_' || $1::text || $2)) IS NULL) ON CONFLICT DO NOTHING`, name, DLQSuffix); err != nil {
		return fmt.Errorf("store: register queue %q: %w", name, err)
	}
	return nil
}

// CreateDLQ creates the dead-letter queue of queue, a queue made by
// another PGMQ client that has none, or a queue (of priority levels too)
// whose DLQ was dropped outside pgbus, without registering queue with
// pgbus: a queue made by another client keeps the default settings. queue
// itself must exist, as a PGMQ queue or a queue of pgbus's. It is
// idempotent.
func (s *Store) CreateDLQ(ctx context.Context, queue string) error {
	if err := ValidateQueueName(queue); err != nil {
		return err
	}
	fns, err := pgmqFunctions(ctx, s.reads)
	if err != nil {
		return err
	}
	dlq := DLQName(queue)
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('pgbus.queue:' || $1))`, queue); err != nil {
			return fmt.Errorf("store: create the DLQ of queue %q: lock: %w", queue, err)
		}
		var exists, unnoted bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)
			OR EXISTS (SELECT 1 FROM pgbus.queues WHERE queue_name = $1),
			EXISTS (SELECT 1 FROM pgbus.queues WHERE queue_name = $1 AND dlq_unmade)`, queue).Scan(&exists, &unnoted); err != nil {
			return fmt.Errorf("store: create the DLQ of queue %q: %w", queue, err)
		}
		if !exists {
			return notFoundf("queue %q does not exist; create it first, with pgbus or with pgmq.create", queue)
		}
		if err := createPhysical(ctx, tx, dlq, "", fns); err != nil {
			return err
		}
		if unnoted {
			if err := noteDLQMade(ctx, tx, queue); err != nil {
				return fmt.Errorf("store: create the DLQ of queue %q: %w", queue, err)
			}
		}
		return nil
	})
}

// noteDLQMade records in pgbus.queues that the DLQ of queue, registered
// without one (RegisterQueue), was made, so that its drop outside pgbus
// is told, pgmq.drop_queue's included, which leaves no trace of it in
// PGMQ's tables (QueuesWithoutTables). A role that may create the DLQ but
// not update pgbus.queues leaves it unrecorded rather than fail: the DLQ
// is made all the same, and only a later drop of it goes untold.
func noteDLQMade(ctx context.Context, tx pgx.Tx, queue string) error {
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, `UPDATE pgbus.queues SET dlq_unmade = false WHERE queue_name = $1 AND dlq_unmade`, queue)
		return err
	})
	if IsPermissionDenied(err) {
		return nil // rolled back to its savepoint: the transaction goes on
	}
	return err
}

// physicalNames lists the physical work queues of a logical queue, highest
// priority first.
func physicalNames(name string, levels int) []string {
	if levels == 0 {
		return []string{name}
	}
	out := make([]string, levels)
	for i := range out {
		out[i] = PriorityQueueName(name, i)
	}
	return out
}

// PriorityQueueName names priority level p of a queue: orders, 2 -> orders_p2.
func PriorityQueueName(name string, p int) string { return fmt.Sprintf("%s_p%d", name, p) }

// PhysicalQueues returns the physical work queues of a logical queue,
// highest priority first: [name] for a plain queue or one pgbus did not
// create, [name_p0, name_p1, ...] for a queue with priority levels.
func (s *Store) PhysicalQueues(ctx context.Context, name string) ([]string, error) {
	if err := ValidatePhysicalName(name); err != nil {
		return nil, err
	}
	var levels int
	err := s.reads.QueryRow(ctx, `SELECT priorities FROM pgbus.queues WHERE queue_name = $1`, name).Scan(&levels)
	switch {
	case isUndefinedTable(err):
		// The first statement of a send: on a database never migrated,
		// say so rather than that a table is missing.
		// The database's error stays reachable (errors.As), for a caller
		// that reads its SQLSTATE.
		return nil, &kindError{kind: errors.Join(ErrSchemaMissing, err), msg: fmt.Sprintf(
			"queue %q: the database has no pgbus schema; migrate it first (Store.Migrate) with a role that may create tables", name)}
	case err != nil && err != pgx.ErrNoRows:
		return nil, fmt.Errorf("store: physical queues of %q: %w", name, err)
	}
	return physicalNames(name, levels), nil
}

// QueueLayout is how a name a worker is given for a queue stands among
// the priority levels pgbus made (QueueLayouts).
type QueueLayout struct {
	// Physical are its physical work queues, highest priority first, as
	// PhysicalQueues returns them.
	Physical []string
	// LevelOf is, when the name is a priority level of another queue, that
	// queue, as LevelOf says; "" otherwise. Level is which level.
	LevelOf string
	Level   int
}

// QueueLayouts returns the layout of each of names, as PhysicalQueues and
// LevelOf say it, in one statement: a worker of hundreds of queues asked
// twice per queue as it started.
func (s *Store) QueueLayouts(ctx context.Context, names []string) (map[string]QueueLayout, error) {
	asked := make([]string, 0, 2*len(names))
	for _, name := range names {
		if err := ValidatePhysicalName(name); err != nil {
			return nil, err
		}
		asked = append(asked, name)
		if base, _, ok := splitLevel(name); ok {
			asked = append(asked, base)
		}
	}
	rows, err := s.reads.Query(ctx, `SELECT queue_name, priorities FROM pgbus.queues WHERE queue_name = ANY($1::text[])`, asked)
	var levels map[string]int
	if err == nil {
		levels = map[string]int{}
		var name string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
			levels[name] = n
			return nil
		})
	}
	switch {
	case isUndefinedTable(err):
		// As PhysicalQueues says it.
		return nil, &kindError{kind: errors.Join(ErrSchemaMissing, err), msg: fmt.Sprintf(
			"queues %s: the database has no pgbus schema; migrate it first (Store.Migrate) with a role that may create tables", strings.Join(names, ", "))}
	case err != nil:
		return nil, fmt.Errorf("store: physical queues of %s: %w", strings.Join(names, ", "), err)
	}
	out := make(map[string]QueueLayout, len(names))
	for _, name := range names {
		l := QueueLayout{Physical: physicalNames(name, levels[name])}
		l.LevelOf, l.Level, _ = LevelIn(levels, name)
		out[name] = l
	}
	return out, nil
}

// QueueExists reports whether the table of physical queue name exists. It
// asks the catalog each time: another process may have dropped the queue.
func (s *Store) QueueExists(ctx context.Context, name string) (bool, error) {
	if err := ValidatePhysicalName(name); err != nil {
		return false, err
	}
	var ok bool
	if err := s.reads.QueryRow(ctx, `SELECT to_regclass(format('%I.%I', 'pgmq', 'q_' || $1::text)) IS NOT NULL`, name).Scan(&ok); err != nil {
		return false, fmt.Errorf("store: look up queue %q: %w", name, err)
	}
	return ok, nil
}

// QueueTablesExist reports whether both tables of physical queue name, its
// queue and its archive, exist: one dropped or renamed outside pgbus is
// made again by a create, which counts the queue as made only when both
// are there.
func (s *Store) QueueTablesExist(ctx context.Context, name string) (bool, error) {
	if err := ValidatePhysicalName(name); err != nil {
		return false, err
	}
	var ok bool
	if err := s.reads.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL`, queueTable(name), archiveTable(name)).Scan(&ok); err != nil {
		return false, fmt.Errorf("store: look up the tables of queue %q: %w", name, err)
	}
	return ok, nil
}

// createPhysical creates the tables of one physical queue: with PGMQ's own
// pgmq.create where PGMQ's functions are installed (fns), else with the
// statements pgmq.create runs, so that PGMQ installed later finds them in
// its own shape. dlq is the DLQ of its messages, "" for a DLQ. Tables made
// anew hand out their ids after the highest the name had (idFloor).
func createPhysical(ctx context.Context, tx pgx.Tx, name, dlq string, fns bool) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, queueTable(name)).Scan(&exists); err != nil {
		return fmt.Errorf("store: create queue %q: %w", name, err)
	}
	var floor int64
	if !exists {
		// A table made anew starts its ids after the highest its name
		// had, so that no new message takes an old one's id, nor its
		// default idempotency key. What is left under the name from a
		// table dropped outside pgbus (as PGMQ's drop_queue drops one)
		// speaks of the old table's messages, and would attach to new
		// ones of the same ids.
		var err error
		if floor, err = idFloor(ctx, tx, name, dlq); err != nil {
			return err
		}
		if err := forgetMessages(ctx, tx, name); err != nil {
			return err
		}
	}
	if err := createTables(ctx, tx, name, fns); err != nil {
		return err
	}
	if err := startIDsAfter(ctx, tx, name, floor); err != nil {
		return err
	}
	return createDLQIndex(ctx, tx, name)
}

// idFloor returns the highest id physical queue name is known to have
// handed out (highestID), for its table made anew.
func idFloor(ctx context.Context, tx pgx.Tx, name, dlq string) (int64, error) {
	floor, err := highestID(ctx, tx, name, dlq)
	if err != nil {
		return 0, fmt.Errorf("store: create queue %q: read the ids its name had: %w", name, err)
	}
	return floor, nil
}

// highestID returns the highest id physical queue name is known to have
// handed out, 0 for none: what its table's id sequence took and its
// table holds, while the table exists; what pgbus's drop noted
// (pgbus.queue_id_floors, on a schema that has it); and what is left of
// its messages, for a table that went outside pgbus (as PGMQ's
// drop_queue drops one): their failures and idempotency keys, its
// archive, and the dead messages of dlq (its DLQ, "" for a DLQ), whose
// retries keep the default keys of their first ids.
func highestID(ctx context.Context, tx pgx.Tx, name, dlq string) (int64, error) {
	noted, err := floorsNoted(ctx, tx)
	if err != nil {
		return 0, err
	}
	var table, archive, deadLetters bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, $3 <> '' AND to_regclass($4) IS NOT NULL`,
		queueTable(name), archiveTable(name), dlq, queueTable(dlq)).Scan(&table, &archive, &deadLetters); err != nil {
		return 0, err
	}
	parts := []string{`(SELECT max(msg_id) FROM pgbus.failures WHERE queue_name = $1)`,
		`(SELECT max(msg_id) FROM pgbus.idempotency_keys WHERE queue_name = $1)`}
	if noted {
		parts = append(parts, `(SELECT last_id FROM pgbus.queue_id_floors WHERE queue_name = $1)`)
	}
	args := []any{name}
	if table {
		args = append(args, queueTable(name))
		parts = append(parts, `(SELECT CASE WHEN has_sequence_privilege(s.seq, 'SELECT, USAGE') THEN pg_sequence_last_value(s.seq) END
			FROM (SELECT pg_get_serial_sequence($2, 'msg_id')::regclass AS seq) s)`,
			`(SELECT max(msg_id) FROM `+queueTable(name)+`)`)
	}
	if archive {
		parts = append(parts, `(SELECT max(msg_id) FROM `+archiveTable(name)+`)`)
	}
	if deadLetters && !table {
		// While the table exists, its sequence covers these. Written by
		// pgbus as a number; anything else another client wrote there
		// is passed over.
		id := `headers->'` + HeaderDeadLetter + `'->>'source_msg_id'`
		parts = append(parts, `(SELECT max(CASE WHEN `+id+` ~ '^[0-9]{1,18}$' THEN (`+id+`)::bigint END) FROM `+queueTable(dlq)+`
			WHERE headers->'`+HeaderDeadLetter+`'->>'source_queue' = $1)`)
	}
	var floor int64
	err = tx.QueryRow(ctx, `SELECT greatest(`+strings.Join(parts, ", ")+`, 0)`, args...).Scan(&floor)
	return floor, err
}

// floorsNoted reports whether the schema notes the ids of dropped queues
// (pgbus.queue_id_floors, migration 33): a schema older than that, which
// a store opened on it to migrate it works on, has no notes to read or
// write.
func floorsNoted(ctx context.Context, tx pgx.Tx) (bool, error) {
	var noted bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('pgbus.queue_id_floors') IS NOT NULL`).Scan(&noted); err != nil {
		return false, fmt.Errorf("look for pgbus.queue_id_floors: %w", err)
	}
	return noted, nil
}

// startIDsAfter makes the new table of physical queue name hand out its
// ids after floor, the highest its name had: its id sequence starts at
// floor+1, so that what the queue was sent reads as the ids taken since
// its start (totalSentSQL), not counting those of the queue before it.
func startIDsAfter(ctx context.Context, tx pgx.Tx, name string, floor int64) error {
	if floor <= 0 {
		return nil
	}
	var seq *string
	if err := tx.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, 'msg_id')`, queueTable(name)).Scan(&seq); err != nil {
		return fmt.Errorf("store: create queue %q: find its id sequence: %w", name, err)
	}
	if seq == nil {
		return fmt.Errorf("store: create queue %q: its table has no id sequence on msg_id, as PGMQ's tables have: drop it and create it again", name)
	}
	// pg_get_serial_sequence quotes the name it returns as SQL needs it.
	if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER SEQUENCE %s START WITH %d RESTART`, *seq, floor+1)); err != nil {
		return fmt.Errorf("store: create queue %q: start its ids after %d, the highest its name had: %w", name, floor, err)
	}
	return nil
}

// createTables creates the tables of physical queue name: with PGMQ's
// pgmq.create when fns, else as pgmq.create would.
func createTables(ctx context.Context, tx pgx.Tx, name string, fns bool) error {
	if fns {
		if _, err := tx.Exec(ctx, `SELECT pgmq.create($1)`, name); err != nil {
			return fmt.Errorf("store: create queue %q with pgmq.create: %w", name, err)
		}
		return nil
	}
	q, a := queueTable(name), archiveTable(name)
	vtIdx := pgx.Identifier{"q_" + name + "_vt_idx"}.Sanitize()
	archIdx := pgx.Identifier{"archived_at_idx_" + name}.Sanitize()
	ddl := `
		CREATE TABLE IF NOT EXISTS ` + q + ` (
			msg_id      bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
			read_ct     int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(),
			vt          timestamptz NOT NULL,
			message     jsonb,
			headers     jsonb
		);
		CREATE INDEX IF NOT EXISTS ` + vtIdx + ` ON ` + q + ` (vt ASC);
		CREATE TABLE IF NOT EXISTS ` + a + ` (
			msg_id      bigint PRIMARY KEY,
			read_ct     int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(),
			archived_at timestamptz NOT NULL DEFAULT now(),
			vt          timestamptz NOT NULL,
			message     jsonb,
			headers     jsonb
		);
		CREATE INDEX IF NOT EXISTS ` + archIdx + ` ON ` + a + ` (archived_at);`
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("store: create tables of queue %q: %w", name, err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ($1, false, false) ON CONFLICT (queue_name) DO NOTHING`, name)
	if err != nil {
		return fmt.Errorf("store: register queue %q in pgmq.meta: %w", name, err)
	}
	return nil
}

// createDLQIndex indexes a dead-letter queue for its newest-first keyset
// pages, which would otherwise sort the whole DLQ on every page, and
// attaches the triggers that keep its group counts (see
// schema/0007_dlq_groups.sql and schema/0013_dlq_group_deltas.sql),
// backfilling them when they were missing: a DLQ made by another PGMQ
// client, or dropped and made again.
func createDLQIndex(ctx context.Context, tx pgx.Tx, name string) error {
	if !strings.HasSuffix(name, DLQSuffix) {
		return nil
	}
	idx := pgx.Identifier{"q_" + name + "_enq_idx"}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+idx+` ON `+queueTable(name)+` (enqueued_at, msg_id)`); err != nil {
		return fmt.Errorf("store: index dead-letter queue %q: %w", name, err)
	}
	if _, err := tx.Exec(ctx, dlqFilterStatsSQL(name)); err != nil {
		return fmt.Errorf("store: create the filter statistics of dead-letter queue %q: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pgbus.dlq_groups_attach($1)`, name); err != nil {
		return fmt.Errorf("store: track the groups of dead-letter queue %q: %w", name, err)
	}
	return nil
}

// dlqFilterStatsSQL creates the planner statistics of a DLQ's filter
// columns: the kind, error class and reason the list filters compare
// (compileDead), which live inside jsonb, so that PostgreSQL has no
// statistics of them otherwise. Without them it guesses that each equality
// keeps 0.5% of the rows, and a filter on two of them (a group's kind and
// error class, as the dashboard's groups link it) 0.0025%: on a DLQ of
// 100,000 messages it then expects about two matches, reads every row and
// sorts them, where walking the newest-first index finds a page after a
// few hundred rows. The expressions must stay the ones compileDead writes:
// the planner matches them by their form. The statistics fill in when the
// DLQ is analyzed (autovacuum does as it grows).
func dlqFilterStatsSQL(dlq string) string {
	stats := pgx.Identifier{"pgmq", "q_" + dlq + "_filter_stats"}.Sanitize()
	return `CREATE STATISTICS IF NOT EXISTS ` + stats + ` (ndistinct, dependencies, mcv) ON (` + sqlDeadKind + `), (` +
		sqlDeadBlock + `->>'error_class'), (` + sqlDeadBlock + `->>'reason') FROM ` + queueTable(dlq)
}

// DropQueue drops queue name and its dead-letter queue, messages and archives
// included. Dropping a queue that does not exist is ErrNotFound. Its
// per-minute counters of the drop's minute go with the drop; the older
// ones, and the failure history and idempotency keys of its messages, are
// deleted once the drop committed, in batches (forgetDropped): an error
// then says the queue was dropped, and what stays until retention.
func (s *Store) DropQueue(ctx context.Context, name string) error {
	if err := ValidateQueueName(name); err != nil {
		return err
	}
	ext, err := pgmqFunctions(ctx, s.reads)
	if err != nil {
		return err
	}
	var droppedAt time.Time
	var physicals []string
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := lockNames(ctx, tx, "drop", queueLocks(name)...); err != nil {
			return err
		}
		if err := refuseLevel(ctx, tx, name, "dropped"); err != nil {
			return err
		}
		var levels int
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT priorities FROM pgbus.queues WHERE queue_name = $1), 0)`, name).Scan(&levels); err != nil {
			return fmt.Errorf("store: drop queue %q: %w", name, err)
		}
		physicals = append(physicalNames(name, levels), DLQName(name))
		if err := s.lockForDrop(ctx, tx, name, physicals); err != nil {
			return err
		}
		found := false
		for _, physical := range physicals {
			dlq := DLQName(name)
			if physical == dlq {
				dlq = ""
			}
			dropped, err := dropPhysical(ctx, tx, physical, dlq, ext)
			if err != nil {
				return err
			}
			found = found || dropped
		}
		tag, err := tx.Exec(ctx, `DELETE FROM pgbus.queues WHERE queue_name = $1`, name)
		if err != nil {
			return fmt.Errorf("store: drop queue %q: unregister: %w", name, err)
		}
		if !found && tag.RowsAffected() == 0 {
			return notFoundf("queue %q does not exist", name)
		}
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&droppedAt); err != nil {
			return fmt.Errorf("store: drop queue %q: %w", name, err)
		}
		// The counters of the drop's minute go with the drop: counters are
		// stored under the start of their minute, so that those a queue
		// made again under the name writes in this minute have the same
		// key, and the batches after the commit leave this minute alone.
		if _, err := tx.Exec(ctx, `DELETE FROM pgbus.stats_minute WHERE queue_name = $1 AND minute >= $2`,
			name, droppedAt.Truncate(time.Minute)); err != nil {
			return fmt.Errorf("store: drop queue %q: delete its counters of the last minute: %w", name, err)
		}
		return nil
	})
	s.tables.Clear() // sub-queues included; the cache refills on use
	if err != nil {
		return err
	}
	// What pgbus keeps of the messages goes after the drop committed too,
	// so that its tables' exclusive locks are not held while millions of
	// failures and keys go.
	for _, physical := range physicals {
		if err := s.forgetDropped(ctx, physical); err != nil {
			return fmt.Errorf("store: queue %q dropped, but not all the failure history and idempotency keys of its messages deleted "+
				"(none names a message of a queue made again under the name, whose ids go on after the old ones; "+
				"retention deletes the rest on its next pass): %w", name, err)
		}
	}
	// Counters go too, so that a queue made again under the name starts
	// at zero: after the drop committed, so that its tables' exclusive
	// locks, which every read of the queues waits for, are not held while
	// a long history of counters goes.
	if err := s.deleteCountersOf(ctx, name, droppedAt); err != nil {
		return fmt.Errorf("store: queue %q dropped, but not all its per-minute counters deleted (retention deletes the rest after the stats retention, %s by default): %w",
			name, StatsRetention, err)
	}
	return nil
}

// deleteCountersOf deletes, in batches of statsPruneBatch, the per-minute
// counters of queue name before the minute it was dropped in (the drop
// deleted those of that minute): those of a queue made again under the
// name since are its own. Each batch is a
// statement of its own, which picks its rows along the counters' primary
// key (queue_name, minute, kind) from the minute the last batch ended at,
// and deletes them by their ctid.
func (s *Store) deleteCountersOf(ctx context.Context, name string, droppedAt time.Time) error {
	from := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		var picked int64
		if err := s.db.QueryRow(ctx, `WITH pick AS MATERIALIZED (
				SELECT ctid, minute FROM pgbus.stats_minute
				WHERE queue_name = $1 AND minute < $2 AND minute >= $4
				ORDER BY minute LIMIT $3
			), d AS (
				DELETE FROM pgbus.stats_minute WHERE ctid = ANY(ARRAY(SELECT ctid FROM pick)) AND queue_name = $1 AND minute < $2
			)
			SELECT (SELECT count(*) FROM pick), coalesce((SELECT max(minute) FROM pick), $4)`,
			name, droppedAt.Truncate(time.Minute), statsPruneBatch, from).Scan(&picked, &from); err != nil {
			return err
		}
		if picked < int64(statsPruneBatch) {
			return nil
		}
	}
}

// dropPhysical drops the tables of physical queue name, whose messages'
// DLQ is dlq ("" for a DLQ), noting the highest id it handed out first.
// It reports whether the queue's tables were there. What pgbus keeps of
// its messages is left to Store.forgetDropped, after the commit.
func dropPhysical(ctx context.Context, tx pgx.Tx, name, dlq string, ext bool) (bool, error) {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)`, name).Scan(&exists); err != nil {
		return false, fmt.Errorf("store: drop queue %q: %w", name, err)
	}
	// Before the tables and the records of its messages go.
	if err := noteLastID(ctx, tx, name, dlq); err != nil {
		return false, err
	}
	if exists {
		if err := dropTables(ctx, tx, name, ext); err != nil {
			return false, err
		}
	}
	// History and keys go once the drop committed (Store.forgetDropped),
	// whether or not its tables existed: its lock waited for the workers'
	// transactions that were writing history for its messages, and the
	// tables gone keep new ones away.
	if !exists {
		return false, nil
	}
	return true, dropDLQGroups(ctx, tx, name)
}

// noteLastID notes the highest id physical queue name handed out
// (highestID; dlq as there), so that a queue made under the name again
// starts after it. A schema older than the notes (floorsNoted) gets none,
// nor does a queue that handed out no id (a DLQ that never held a
// message, a level never sent to): a queue made again starts at 1 all the
// same, and the note would say nothing.
func noteLastID(ctx context.Context, tx pgx.Tx, name, dlq string) error {
	noted, err := floorsNoted(ctx, tx)
	if err != nil || !noted {
		if err != nil {
			return fmt.Errorf("store: drop queue %q: %w", name, err)
		}
		return nil
	}
	last, err := highestID(ctx, tx, name, dlq)
	if err == nil && last <= 0 {
		return nil
	}
	if err == nil {
		_, err = tx.Exec(ctx, `INSERT INTO pgbus.queue_id_floors (queue_name, last_id) VALUES ($1, $2)
			ON CONFLICT (queue_name) DO UPDATE SET last_id = greatest(pgbus.queue_id_floors.last_id, excluded.last_id)`, name, last)
	}
	if err != nil {
		return fmt.Errorf("store: drop queue %q: note the highest id it handed out: %w", name, err)
	}
	return nil
}

// dropTables drops the tables of physical queue name, with pgmq.drop_queue
// when ext (PGMQ is installed as an extension), else by hand.
func dropTables(ctx context.Context, tx pgx.Tx, name string, ext bool) error {
	if ext {
		if _, err := tx.Exec(ctx, `SELECT pgmq.drop_queue($1)`, name); err != nil {
			return fmt.Errorf("store: drop queue %q with pgmq.drop_queue: %w", name, err)
		}
		// pgmq.drop_queue leaves the queue's row of pgmq.meta when its
		// table is gone (a restore that left the tables out): it goes too.
		if _, err := tx.Exec(ctx, `DELETE FROM pgmq.meta WHERE queue_name = $1`, name); err != nil {
			return fmt.Errorf("store: drop queue %q from pgmq.meta: %w", name, err)
		}
		return nil
	}
	ddl := `DROP TABLE IF EXISTS ` + queueTable(name) + `; DROP TABLE IF EXISTS ` + archiveTable(name)
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("store: drop tables of queue %q: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM pgmq.meta WHERE queue_name = $1`, name); err != nil {
		return fmt.Errorf("store: drop queue %q from pgmq.meta: %w", name, err)
	}
	return nil
}

// forgetMessages deletes what pgbus keeps about the messages of physical
// queue name beside its tables: their failure history and idempotency keys.
func forgetMessages(ctx context.Context, tx pgx.Tx, name string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM pgbus.failures WHERE queue_name = $1`, name); err != nil {
		return fmt.Errorf("store: drop history of queue %q: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM pgbus.idempotency_keys WHERE queue_name = $1`, name); err != nil {
		return fmt.Errorf("store: drop idempotency keys of queue %q: %w", name, err)
	}
	return nil
}

// forgetBatch is how many rows of the failure history, or idempotency
// keys, one statement of Store.forgetDropped deletes. A variable so that
// tests can lower it.
var forgetBatch = 10000

// forgetDropped deletes, after a drop of physical queue name committed,
// what pgbus keeps about its messages beside its tables: their failure
// history (pruneFailuresOf) and idempotency keys (forgetKeysOf), each
// forgetBatch rows to a statement, a transaction of its own, while the
// name stays dropped. Once a queue is made again under the name they stop:
// what is left names none of its messages, whose ids go on after the
// highest the old queue's records name (highestID), and goes with the
// rows retention deletes (pruneOrphanFailures, pruneKeys).
func (s *Store) forgetDropped(ctx context.Context, name string) error {
	if _, err := s.pruneFailuresOf(ctx, name, forgetBatch); err != nil {
		return fmt.Errorf("delete the failure history of %q: %w", name, err)
	}
	if err := s.forgetKeysOf(ctx, name); err != nil {
		return fmt.Errorf("delete the idempotency keys of %q: %w", name, err)
	}
	return nil
}

// forgetKeysOf deletes the idempotency keys of dropped physical queue
// name, forgetBatch to a statement, along their primary key from the key
// the last batch ended at, while pgmq.meta does not list the name. Each
// batch deletes the keys it picked by their ctid, so that a key a queue
// made again meanwhile wrote (a new row version) stays. The first batch
// starts after "", which sorts before every key (a key has a byte at
// least), so that each batch is a range of the index.
func (s *Store) forgetKeysOf(ctx context.Context, name string) error {
	after := ""
	for {
		var picked, deleted int64
		if err := s.db.QueryRow(ctx, `WITH pick AS MATERIALIZED (
				SELECT ctid, key FROM pgbus.idempotency_keys
				WHERE queue_name = $1 AND key > $3
				ORDER BY key LIMIT $2
			), d AS (
				DELETE FROM pgbus.idempotency_keys WHERE ctid = ANY(ARRAY(SELECT ctid FROM pick)) AND queue_name = $1
					AND NOT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM pick), (SELECT count(*) FROM d), coalesce((SELECT max(key) FROM pick), $3)`,
			name, forgetBatch, after).Scan(&picked, &deleted, &after); err != nil {
			return err
		}
		if picked < int64(forgetBatch) || deleted < picked {
			return nil
		}
	}
}

// dropDLQGroups forgets the group counts of a dropped DLQ, base and
// pending deltas. It runs after the drop, whose lock keeps writers, and so
// their triggers, away until commit.
func dropDLQGroups(ctx context.Context, tx pgx.Tx, name string) error {
	if !strings.HasSuffix(name, DLQSuffix) {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pgbus.dlq_groups_forget($1)`, name); err != nil {
		return fmt.Errorf("store: drop the groups of dead-letter queue %q: %w", name, err)
	}
	return nil
}

// ListQueues lists every physical PGMQ queue, dead-letter queues included,
// ordered by name byte by byte, whatever the database's collation, as Go
// compares names. Queues created by other PGMQ clients are listed too.
func (s *Store) ListQueues(ctx context.Context) ([]QueueInfo, error) {
	rows, err := s.reads.Query(ctx, `SELECT queue_name, is_partitioned, is_unlogged, created_at FROM pgmq.meta ORDER BY queue_name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("store: list queues: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueInfo, error) {
		var q QueueInfo
		err := r.Scan(&q.Name, &q.IsPartitioned, &q.IsUnlogged, &q.CreatedAt)
		return q, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list queues: %w", err)
	}
	return out, nil
}

// queueErr is the error of a statement on queue name's own table: "relation
// does not exist" (SQLSTATE 42P01) becomes ErrNotFound, and anything else
// is wrapped with the operation and queue. A statement that touches the
// queue's archive too takes archiveErr, which tells the two apart.
func queueErr(err error, op, name string) error {
	if errors.Is(err, errUndefinedTable) || isUndefinedTable(err) {
		return notFoundf("queue %q does not exist", name)
	}
	var pgErr *pgconn.PgError
	errors.As(err, &pgErr)
	if pgErr != nil && pgErr.Code == "42703" && strings.Contains(pgErr.Message, "headers") {
		// A table made by a PGMQ older than 1.5, before messages had
		// headers: nothing pgbus does with the queue can work.
		return fmt.Errorf("store: %s queue %q: its tables have no headers column (made by a PGMQ older than 1.5): add it with "+
			`ALTER TABLE pgmq."q_%s" ADD COLUMN IF NOT EXISTS headers jsonb; ALTER TABLE pgmq."a_%s" ADD COLUMN IF NOT EXISTS headers jsonb, or upgrade PGMQ: %w`, op, name, name, name, err)
	}
	return fmt.Errorf("store: %s queue %q: %w", op, name, err)
}

// archiveErr is queueErr for a statement on queue name's table and its
// archive table. PostgreSQL names the missing relation only in its message,
// which lc_messages translates (»pgmq.a_orders« in German), so on 42P01 the
// catalog says which is missing: the archive alone is ArchiveMissingError,
// the queue's table ErrNotFound, and neither (another relation, such as a
// pgbus table) the error as it is.
func (s *Store) archiveErr(ctx context.Context, err error, op, name string) error {
	if !isUndefinedTable(err) {
		return queueErr(err, op, name)
	}
	var queue, archive bool
	if cerr := s.db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`,
		queueTable(name), archiveTable(name)).Scan(&queue, &archive); cerr != nil {
		return fmt.Errorf("store: %s queue %q: a table of the queue or its archive is missing, and checking which failed (%v): %w", op, name, cerr, err)
	}
	switch {
	case !queue:
		return notFoundf("queue %q does not exist", name)
	case !archive:
		// The queue is there, its archive is not: what is done cannot be
		// archived.
		return &ArchiveMissingError{Queue: name}
	}
	return fmt.Errorf("store: %s queue %q: %w", op, name, err)
}

// errUndefinedTable stands for PostgreSQL's "relation does not exist" where
// the store finds a queue missing before asking the server.
var errUndefinedTable = errors.New("undefined table")

// VacuumQueue vacuums queue's table, removing the dead row versions and
// index entries that messages done leave at the head of its reads.
// SKIP_LOCKED leaves a table another vacuum is working on (autovacuum's,
// or another worker process's) to it. A role that does not own the table
// gets a warning from PostgreSQL and no vacuum, not an error: autovacuum
// then does the work.
//
// Without shrink the table keeps its size and reuses the space. With
// shrink it gives space back, which takes the table's exclusive lock for
// a moment, so shrink is for a queue gone quiet, not one being worked: an
// empty table is truncated (table and indexes back to nothing; message ids
// go on from where they were), any other has the empty pages at its end
// cut off by the vacuum.
func (s *Store) VacuumQueue(ctx context.Context, queue string, shrink bool) error {
	if err := ValidatePhysicalName(queue); err != nil {
		return err
	}
	opts := "SKIP_LOCKED, TRUNCATE false"
	if shrink {
		if emptied, err := s.truncateIfEmpty(ctx, queue); emptied || errors.Is(err, ErrNotFound) {
			return err
		}
		opts = "SKIP_LOCKED"
	}
	if _, err := s.db.Exec(ctx, `VACUUM (`+opts+`) `+queueTable(queue)); err != nil {
		return queueErr(err, "vacuum", queue)
	}
	return nil
}

// MayVacuum reports whether the role may vacuum queue's table and
// truncate it: whether it owns the table (or is a member of the role that
// does), or, from PostgreSQL 17, holds MAINTAIN and TRUNCATE on it. No one
// else may; PostgreSQL would only warn and skip the vacuum each time.
func (s *Store) MayVacuum(ctx context.Context, queue string) (bool, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return false, err
	}
	var may *bool
	err := s.db.QueryRow(ctx, `
		SELECT pg_has_role(c.relowner, 'USAGE') OR CASE
			WHEN current_setting('server_version_num')::int >= 170000
			THEN has_table_privilege(c.oid, 'MAINTAIN') AND has_table_privilege(c.oid, 'TRUNCATE')
			ELSE false END
		FROM (SELECT to_regclass($1) AS oid) t LEFT JOIN pg_catalog.pg_class c ON c.oid = t.oid`, queueTable(queue)).Scan(&may)
	if err != nil {
		return false, queueErr(err, "check the privileges on", queue)
	}
	if may == nil {
		return false, notFoundf("queue %q does not exist", queue)
	}
	return *may, nil
}

// truncateIfEmpty truncates queue's table when it holds no message. It
// waits at most shrinkLockWait for the table's lock, so readers stall no
// longer than that, and checks for messages only once it holds the lock,
// when no other transaction can be adding any. It reports false, and any
// error but a missing table is the caller's to ignore, when the table was
// busy, not empty, or not the role's to truncate.
func (s *Store) truncateIfEmpty(ctx context.Context, queue string) (bool, error) {
	q := queueTable(queue)
	emptied := false
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, shrinkLockWait); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+q+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		var busy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+q+`)`).Scan(&busy); err != nil || busy {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE `+q); err != nil {
			return err
		}
		emptied = true
		return nil
	})
	if err != nil {
		return false, queueErr(err, "truncate the empty table of", queue)
	}
	return emptied, nil
}

// shrinkLockWait bounds how long truncateIfEmpty waits for its lock.
const shrinkLockWait = 100 * time.Millisecond

// levelWords words a queue's number of priority levels.
func levelWords(n int) string {
	if n == 0 {
		return "no priority levels"
	}
	return fmt.Sprintf("%d priority levels", n)
}
