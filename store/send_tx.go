package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrTxFailed is wrapped by an error of SendTx that PostgreSQL raised
// inside the caller's transaction (or that lost its connection): PostgreSQL
// runs nothing more in that transaction, so the caller must roll it back.
// Whatever else such an error wraps (ErrInvalid for a number jsonb cannot
// hold, ErrNotFound for a queue dropped while the send ran), the messages
// sent in the transaction go with the rollback. Every other error of SendTx
// ran nothing that failed in the transaction, which goes on as it was.
var ErrTxFailed = errors.New("the transaction failed")

// TxMessage is one message of SendTx with the physical queue it goes to.
type TxMessage struct {
	// Queue is a physical queue: a queue, or a priority level of one.
	Queue string
	NewMessage
}

// CheckTx refuses, as ErrInvalid, a nil transaction (a nil interface or
// a nil pointer in one), without asking the server.
func CheckTx(tx pgx.Tx) error {
	if tx == nil {
		return invalidf("send in a transaction: the transaction is nil; pass the pgx.Tx that Begin returned")
	}
	if v := reflect.ValueOf(tx); v.Kind() == reflect.Pointer && v.IsNil() {
		return invalidf("send in a transaction: the transaction is a nil %T; pass the pgx.Tx that Begin returned", tx)
	}
	return nil
}

// SendTx enqueues msgs in the caller's transaction tx and returns their
// ids in order: they become visible, and workers waiting for a
// notification are woken, only when tx commits; a rollback takes them,
// and the idempotency keys they claimed, away. tx must be open, on this
// store's database.
//
// Every message is checked, and tx with it, before anything is written: a
// nil, committed or rolled back tx, one on another database or server, a
// queue that does not exist, a message out of bounds are refused with tx
// as it was. An error PostgreSQL raises inside tx wraps ErrTxFailed.
//
// A message with an idempotency key returns the id of the first message of
// its queue with that key, live or archived within retention, whether
// committed or sent earlier in tx. tx holds the key's lock until it ends,
// so a send of the same key elsewhere waits for tx to commit (and returns
// its message) or roll back (and sends its own). Under REPEATABLE READ or
// SERIALIZABLE a key another transaction committed after tx's snapshot
// fails with a serialization error (SQLSTATE 40001) instead: roll back and
// run the transaction again. A batch takes its keys' locks in one order;
// separate sends in two transactions that take shared keys in opposite
// orders may deadlock, which PostgreSQL breaks by failing one of them.
func (s *Store) SendTx(ctx context.Context, tx pgx.Tx, msgs []TxMessage) ([]int64, error) {
	if err := CheckTx(tx); err != nil {
		return nil, err
	}
	p, err := planBatch("send in a transaction", msgs)
	if err != nil {
		return nil, err
	}
	if err := s.checkTxTargets(ctx, tx, p.queues); err != nil {
		return nil, err
	}
	ids, err := p.write(ctx, tx)
	if err != nil {
		return nil, txFailed(err)
	}
	return ids, nil
}

// TxLayout is a send target's layout as LayoutInTx reads it in a caller's
// transaction.
type TxLayout struct {
	// Physical are the queue's physical queues, as PhysicalQueues
	// returns them.
	Physical []string
	// Base is the queue the name is a priority level of, as LevelOf
	// reports it, and Level that level; Base is "" for a name that is no
	// level.
	Base  string
	Level int
}

// LayoutInTx reads, in the caller's transaction tx, what PhysicalQueues
// and LevelOf read on the pool: the physical queues of the send target
// name, and whether name is a priority level of another queue. It needs no
// connection of the pool, whose last one tx may hold, and it checks tx as
// SendTx does: open and on this store's database. Its first statement
// reads only the catalog, so that a database without pgbus's schema, or a
// role that may not read it, is refused with tx as it was; an error
// PostgreSQL raises inside tx after it wraps ErrTxFailed.
func (s *Store) LayoutInTx(ctx context.Context, tx pgx.Tx, name string) (TxLayout, error) {
	if err := CheckTx(tx); err != nil {
		return TxLayout{}, err
	}
	if err := ValidatePhysicalName(name); err != nil {
		return TxLayout{}, err
	}
	var id dbIdentity
	var exists, readable bool
	err := tx.QueryRow(ctx, `SELECT current_database(), pg_postmaster_start_time(),
			to_regclass('pgbus.queues') IS NOT NULL, coalesce(has_table_privilege(to_regclass('pgbus.queues'), 'SELECT'), false)`).
		Scan(&id.database, &id.started, &exists, &readable)
	if err != nil {
		return TxLayout{}, txErr(err)
	}
	if err := s.sameDatabase(ctx, tx, id); err != nil {
		return TxLayout{}, err
	}
	switch {
	case !exists:
		return TxLayout{}, &kindError{kind: ErrSchemaMissing, msg: fmt.Sprintf(
			"queue %q: the database has no pgbus schema; migrate it first (Store.Migrate) with a role that may create tables; nothing was written, and the transaction goes on", name)}
	case !readable:
		return TxLayout{}, fmt.Errorf("store: physical queues of %q: the role may not read pgbus.queues, which holds each queue's priority levels: grant it SELECT on pgbus.queues; nothing was written, and the transaction goes on", name)
	}
	base, level, isLevel := splitLevel(name)
	var baseArg any
	if isLevel {
		baseArg = base
	}
	var levels, baseLevels *int
	if err := tx.QueryRow(ctx, `SELECT (SELECT priorities FROM pgbus.queues WHERE queue_name = $1),
			(SELECT priorities FROM pgbus.queues WHERE queue_name = $2)`, name, baseArg).Scan(&levels, &baseLevels); err != nil {
		return TxLayout{}, txFailed(fmt.Errorf("store: send in a transaction: physical queues of %q: %w", name, err))
	}
	l := TxLayout{Physical: physicalNames(name, deref(levels))}
	if isLevel && level < deref(baseLevels) {
		l.Base, l.Level = base, level
	}
	return l, nil
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

// SendRouted is SendTx in a transaction of the store's own: it enqueues
// msgs, to one or more physical queues, all or none, and returns their ids
// in order, committed. Every message is checked before anything is
// written. An error leaves nothing written, except one that ends the
// commit itself (a lost connection), which leaves the outcome unknown.
func (s *Store) SendRouted(ctx context.Context, msgs []TxMessage) ([]int64, error) {
	p, err := planBatch("send", msgs)
	if err != nil {
		return nil, err
	}
	var ids []int64
	err = s.sendInTx(ctx, func(tx pgx.Tx) (err error) {
		ids, err = p.write(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// sendInTx runs write, which writes a batch, in a transaction of the
// store's own, and commits it. write's error is returned as it is; a
// commit whose answer did not come back wraps ErrCommitUnknown: the batch
// may be in the queue, and is not to be called not sent.
func (s *Store) sendInTx(ctx context.Context, write func(pgx.Tx) error) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store: send: begin the batch's transaction: %w", err)
	}
	if err := write(tx); err != nil {
		_ = tx.Rollback(ctx) // a cancelled ctx closes the connection, which ends the transaction
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		if OutcomeUnknown(err) {
			return fmt.Errorf("store: send: commit the batch's transaction: %w: %w", ErrCommitUnknown, err)
		}
		return fmt.Errorf("store: send: commit the batch's transaction: %w", err)
	}
	return nil
}

// SendRoutedNoted is SendRouted that also writes note, in the batch's
// transaction, as a pending audit entry (StartAudit's) with its result:
// how far the operation that sends the batch has gone, once the batch is
// sent. It commits with the batch, so a process killed after the commit
// leaves the note of every batch it sent, and none of a batch it did not.
// The note is dated as the entry it replaces: when the operation started.
// note.Completes names the pending entry it replaces, which ListAudit then
// leaves out, as the entry of an outcome replaces it; the log stays
// append-only. The note is best effort: written in a savepoint, one the
// database refuses leaves the batch to commit without it, and noteID 0.
func (s *Store) SendRoutedNoted(ctx context.Context, msgs []TxMessage, note AuditEntry) (ids []int64, noteID int64, err error) {
	p, err := planBatch("send", msgs)
	if err != nil {
		return nil, 0, err
	}
	if err := CheckAuditEntry(note); err != nil {
		return nil, 0, err
	}
	if note.Client == "" {
		note.Client = "unknown"
	}
	var pid, key, completes any
	if note.RunPID != 0 {
		pid, key = note.RunPID, note.RunKey
	}
	if note.Completes != 0 {
		completes = note.Completes
	}
	err = s.sendInTx(ctx, func(tx pgx.Tx) (err error) {
		noteID = 0
		if ids, err = p.write(ctx, tx); err != nil {
			return err
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("store: send: begin the audit note's savepoint: %w", err)
		}
		// Dated when the operation started, as the entry it replaces.
		err = sp.QueryRow(ctx, `INSERT INTO pgbus.audit_log (client, transport, principal, tool, arguments, result, pending, completes, run_pid, run_key, at)
			VALUES ($1, $2, $3, $4, $5, $6, true, $7, $8, $9, coalesce((SELECT at FROM pgbus.audit_log WHERE id = $7::bigint), now())) RETURNING id`,
			note.Client, note.Transport, note.Principal, note.Tool, boundedJSON(note.Arguments), boundedJSON(note.Result), completes, pid, key).Scan(&noteID)
		if err != nil {
			noteID = 0
			return sp.Rollback(ctx)
		}
		if err := sp.Commit(ctx); err != nil {
			return fmt.Errorf("store: send: release the audit note's savepoint: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return ids, noteID, nil
}

// batchPlan is a checked batch of TxMessages, grouped for writing.
type batchPlan struct {
	msgs   []TxMessage
	queues []string // in the order of their first message
	groups map[string]*txGroup
	// keys are the batch's distinct idempotency keys, in lock order.
	keys []queueKey
}

type queueKey struct{ queue, key string }

// planBatch checks every message of a batch, before anything is written,
// and groups them by physical queue; what names the operation in errors.
func planBatch(what string, msgs []TxMessage) (*batchPlan, error) {
	if len(msgs) == 0 || len(msgs) > MaxBatch {
		return nil, invalidf("%s: a batch holds 1 to %d messages, not %d", what, MaxBatch, len(msgs))
	}
	// The messages of each queue, in their order: a batch without keys
	// is one statement a queue.
	p := &batchPlan{msgs: msgs, groups: map[string]*txGroup{}}
	for i, m := range msgs {
		if err := ValidatePhysicalName(m.Queue); err != nil {
			return nil, err
		}
		idx := i
		if len(msgs) == 1 {
			idx = -1
		}
		if err := validateNewMessage(idx, m.NewMessage); err != nil {
			return nil, err
		}
		g := p.groups[m.Queue]
		if g == nil {
			g = &txGroup{}
			p.groups[m.Queue] = g
			p.queues = append(p.queues, m.Queue)
		}
		g.add(i, m.NewMessage)
		if m.IdempotencyKey != "" {
			p.keys = append(p.keys, queueKey{m.Queue, m.IdempotencyKey})
		}
	}
	slices.SortFunc(p.keys, func(a, b queueKey) int {
		return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.key, b.key))
	})
	if p.keys = slices.Compact(p.keys); len(p.keys) > MaxBatchKeys {
		return nil, invalidf("%s: a batch holds at most %d distinct idempotency keys, not %d; send it in smaller batches", what, MaxBatchKeys, len(p.keys))
	}
	return p, nil
}

// write writes a planned batch in tx. An error came from PostgreSQL inside
// tx, which is then aborted.
func (p *batchPlan) write(ctx context.Context, tx pgx.Tx) ([]int64, error) {
	ids := make([]int64, len(p.msgs))
	if len(p.keys) == 0 {
		for _, q := range p.queues {
			g := p.groups[q]
			sql, args := insertSQL(q, g.notify, g.delays, g.payloads, g.headers)
			rows, err := tx.Query(ctx, sql, args...)
			if err != nil {
				return nil, sendErr(err, q)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return nil, sendErr(err, q)
			}
			for j, i := range g.at {
				ids[i] = got[j]
			}
		}
		return ids, nil
	}

	qs, ks := make([]string, len(p.keys)), make([]string, len(p.keys))
	for i, k := range p.keys {
		qs[i], ks[i] = k.queue, k.key
	}
	// The locks a keyed send on the pool and a DLQ retry take, in the
	// order of their ids, as a batch on the pool takes them.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(l.h) FROM (
		SELECT DISTINCT `+keyLockSQL("q", "k")+` AS h FROM unnest($1::text[], $2::text[]) AS t(q, k) ORDER BY 1) AS l`, qs, ks); err != nil {
		return nil, fmt.Errorf("store: send: lock the idempotency keys: %w", err)
	}
	for i, m := range p.msgs {
		id, _, err := sendOneKeyed(ctx, tx, m.Queue, m.NewMessage)
		if err != nil {
			return nil, sendErr(err, m.Queue)
		}
		ids[i] = id
	}
	return ids, nil
}

// txGroup is the messages of a batch to one queue, as insertSQL takes
// them, with their places in the batch.
type txGroup struct {
	at       []int
	delays   []int64
	payloads []string
	headers  []*string
	notify   bool
}

func (g *txGroup) add(i int, m NewMessage) {
	g.at = append(g.at, i)
	g.delays = append(g.delays, m.Delay.Microseconds())
	g.payloads = append(g.payloads, jsonbText(m.Payload))
	var h *string
	if len(m.Headers) > 0 {
		str := jsonbText(m.Headers)
		h = &str
	}
	g.headers = append(g.headers, h)
	g.notify = g.notify || m.Delay == 0
}

// checkTxTargets checks, in one statement that cannot fail on what the
// database holds, that tx is open, on this store's database, and that the
// tables of queues exist there. It looks at the catalog only, so that a
// database without pgbus's schema is refused without aborting tx.
func (s *Store) checkTxTargets(ctx context.Context, tx pgx.Tx, queues []string) error {
	tables := make([]string, len(queues))
	for i, q := range queues {
		tables[i] = queueTable(q)
	}
	var id dbIdentity
	var missing []int32
	err := tx.QueryRow(ctx, `SELECT current_database(), pg_postmaster_start_time(),
			coalesce((SELECT array_agg(n::int) FROM unnest($1::text[]) WITH ORDINALITY AS t(tbl, n) WHERE to_regclass(tbl) IS NULL), '{}')`,
		tables).Scan(&id.database, &id.started, &missing)
	if err != nil {
		return txErr(err)
	}
	if err := s.sameDatabase(ctx, tx, id); err != nil {
		return err
	}
	if len(missing) > 0 {
		q := queues[missing[0]-1]
		return notFoundf("queue %q does not exist: create it first, and commit that, then send to it; nothing was written, and the transaction goes on", q)
	}
	return nil
}

// txErr explains an error of the first statement of a send in the
// caller's transaction: the transaction was over, or had failed already.
func txErr(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("%w: send in a transaction: the transaction is committed or rolled back already; send in one that is still open, before its Commit: %w", ErrInvalid, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "25P02" { // in_failed_sql_transaction
		return txFailed(fmt.Errorf("store: send in a transaction: the transaction failed on an earlier statement, and PostgreSQL runs nothing more in it; send in a new one: %w", err))
	}
	return txFailed(fmt.Errorf("store: send in a transaction: %w", err))
}

// txFailed marks an error raised inside the caller's transaction.
func txFailed(err error) error { return &txFailedError{markUnavailable(err)} }

type txFailedError struct{ err error }

func (e *txFailedError) Error() string {
	return e.err.Error() + " (the transaction is aborted: roll it back)"
}
func (e *txFailedError) Unwrap() []error { return []error{ErrTxFailed, e.err} }

// dbIdentity tells one database of one server run from any other: two
// servers started at the same microsecond are not met in practice.
type dbIdentity struct {
	database string
	started  time.Time
}

// sameDatabase refuses, as ErrInvalid, a transaction on a database other
// than the store's. It asks no connection of the store's pool for a
// transaction on one of them, or on a connection made to the same
// address and database (a service sharing its pool with pgbus sends in a
// transaction that may hold the pool's last connection): what tx read of
// itself is then the store's database too. Else the store's identity is
// read once, and again when a transaction does not match it, as after a
// restart of the server: on the pool when it has a connection free, or on
// a connection made beside it (diagnose) when it has none.
func (s *Store) sameDatabase(ctx context.Context, tx pgx.Tx, id dbIdentity) error {
	own := s.identity.Load()
	if own != nil && own.started.Equal(id.started) && own.database == id.database {
		return nil
	}
	if s.sameAddress(tx) {
		s.identity.Store(&id)
		return nil
	}
	var fresh dbIdentity
	err := s.diagnose(ctx, "send in a transaction: read which database the store is on", func(q querier) error {
		rows, err := q.Query(ctx, `SELECT current_database(), pg_postmaster_start_time()`)
		if err != nil {
			return err
		}
		fresh, err = pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (dbIdentity, error) {
			var d dbIdentity
			err := row.Scan(&d.database, &d.started)
			return d, err
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("store: send in a transaction: read which database the store is on: %w", err)
	}
	s.identity.Store(&fresh)
	switch {
	case fresh.database != id.database:
		return invalidf("send in a transaction: the transaction is on database %q, the store on %q: begin it on a pool of the store's database, so that workers see the messages; nothing was written, and the transaction goes on", id.database, fresh.database)
	case !fresh.started.Equal(id.started):
		return invalidf("send in a transaction: the transaction is on database %q of another server than the store's: begin it on a pool of the store's server, so that workers see the messages; nothing was written, and the transaction goes on", id.database)
	}
	return nil
}

// sameAddress reports whether tx's connection was made to the host, port
// and database the store's pool connects to, as the connections of the
// pool itself are.
func (s *Store) sameAddress(tx pgx.Tx) bool {
	conn := tx.Conn()
	if conn == nil || s.pool == nil {
		return false
	}
	got, own := conn.Config(), s.pool.Config().ConnConfig
	return got.Host == own.Host && got.Port == own.Port && got.Database == own.Database
}
