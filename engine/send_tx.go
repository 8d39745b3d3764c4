package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/store"
)

// BatchMessage is one message of SendBatch and SendBatchTx.
type BatchMessage struct {
	// Payload is the message body, as Send takes it: marshalled to JSON
	// unless it already is JSON (json.RawMessage or []byte).
	Payload any
	// Options are its options, as Send takes them; each message of a
	// batch has its own kind, key, delay and priority level.
	Options SendOptions
}

// SendTx is Send in the caller's own transaction: the message is written
// by tx, so it commits with the caller's other writes or not at all. It
// becomes visible to workers, and wakes those waiting for a notification,
// only when tx commits; a rollback takes it away, and its idempotency key
// is free again. tx is any pgx.Tx (from pgx.Conn.Begin, pgxpool.Pool.Begin,
// or a savepoint's Begin) on the database the client's store is on.
//
// SendTx validates, routes to a priority level, applies idempotency keys,
// deadlines, headers and the SendObservers' headers as Send does, with the
// same errors. A delay counts from the send, not from the commit, and the
// message's enqueue time is tx's start (PostgreSQL's now()). The observers
// see the send when tx writes it, not when tx commits. It creates no queue: the queue must exist, created and
// committed, before the send. Everything it reads runs in tx, as its
// write does: the queue's priority levels (when the client has not read
// them within the last 5 seconds), which database tx is on, the database
// server's clock for a deadline. It needs no other connection, so a
// service whose pool the store shares (store.New) sends in a transaction
// holding that pool's last connection.
//
// An error that wraps store.ErrTxFailed came from PostgreSQL inside tx,
// which is then aborted: roll it back (say, a JSON number jsonb cannot
// hold, a lock or statement timeout, a serialization failure, a lost
// connection). Any other error wrote nothing and left tx as it was, to go
// on or to commit without the message: a nil, committed or rolled back tx,
// a tx on another database (store.ErrInvalid), a queue that does not
// exist (store.ErrNotFound), a message Send would refuse. A connection
// lost in tx (the database down, the network cut) fails it wrapping
// store.ErrTxFailed and store.ErrUnavailable, as Send's errors of an
// unavailable database wrap store.ErrUnavailable.
// A caller that must keep tx whatever happens sends in a savepoint
// (tx.Begin) and rolls the savepoint back on an error.
//
// A message with an idempotency key returns the id of the first message
// sent with it, committed or sent earlier in tx, as Send does. tx holds
// the key's lock until it ends, so a send of the same key by another
// transaction (or by Send) waits for tx: after a commit it returns tx's
// message, after a rollback it sends its own. Under REPEATABLE READ or
// SERIALIZABLE, a key committed by another transaction after tx's snapshot
// fails tx with a serialization error (SQLSTATE 40001): run the
// transaction again. Two transactions that send shared keys in opposite
// orders may deadlock, and PostgreSQL fails one: send a transaction's keys
// in one SendBatchTx, which takes their locks in one order.
func (c *Client) SendTx(ctx context.Context, tx pgx.Tx, queue string, payload any, opts SendOptions) (int64, error) {
	ids, err := c.sendTx(ctx, tx, "SendTx", queue, []BatchMessage{{Payload: payload, Options: opts}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// SendBatchTx is SendTx for up to store.MaxBatch messages to one queue,
// each with its own options, all written or none, and returns their ids in
// order. Every message is checked before anything is written. A batch
// without idempotency keys is one statement a priority level; one with
// keys takes their locks, in one order, and writes message by message.
// Its errors are SendTx's: one that wraps store.ErrTxFailed
// aborted tx, any other left it as it was; a message's own error, a
// value PostgreSQL refused among them, is a *BatchMessageError naming its
// index in msgs.
func (c *Client) SendBatchTx(ctx context.Context, tx pgx.Tx, queue string, msgs []BatchMessage) ([]int64, error) {
	return c.sendTx(ctx, tx, "SendBatchTx", queue, msgs)
}

// SendBatch enqueues up to store.MaxBatch messages on queue, each with its
// own options, in a transaction of the client's own, and returns their ids
// in order: all are written, or none. It is SendBatchTx with the client
// beginning and committing the transaction, for a program that has no
// transaction of its own to send in: every message is checked before
// anything is written, each goes to its own priority level, idempotency
// keys return the first message's id (an earlier message of the batch's
// too; at most store.MaxBatchKeys distinct keys a batch), and the
// SendObservers see each message. A batch without
// idempotency keys is one statement a priority level; one with keys takes
// their locks, in one order, and writes message by message. A message's
// own error, a value PostgreSQL refused among them (a number beyond what
// jsonb holds), is a *BatchMessageError naming its index in msgs. A nil
// ctx is refused with store.ErrInvalid.
func (c *Client) SendBatch(ctx context.Context, queue string, msgs []BatchMessage) ([]int64, error) {
	if err := c.made("SendBatch"); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: SendBatch needs a context: pass context.Background(), or one that bounds the send", store.ErrInvalid)
	}
	return c.sendBatch(ctx, nil, "SendBatch", queue, msgs, c.store.SendRouted)
}

// SendBatchNoted is SendBatch that also writes note, a pending entry of
// the audit log saying how far the operation sending the batch has gone,
// in the batch's transaction (store.Store.SendRoutedNoted): committed with
// the batch or not at all. noteID is the note's id, 0 when the database
// refused it (the batch is sent all the same).
func (c *Client) SendBatchNoted(ctx context.Context, queue string, msgs []BatchMessage, note store.AuditEntry) (ids []int64, noteID int64, err error) {
	if err := c.made("SendBatchNoted"); err != nil {
		return nil, 0, err
	}
	if ctx == nil {
		return nil, 0, fmt.Errorf("%w: SendBatchNoted needs a context: pass context.Background(), or one that bounds the send", store.ErrInvalid)
	}
	ids, err = c.sendBatch(ctx, nil, "SendBatch", queue, msgs, func(ctx context.Context, built []store.TxMessage) ([]int64, error) {
		var ids []int64
		var err error
		ids, noteID, err = c.store.SendRoutedNoted(ctx, built, note)
		return ids, err
	})
	if err != nil {
		noteID = 0
	}
	return ids, noteID, err
}

func (c *Client) sendTx(ctx context.Context, tx pgx.Tx, fn, queue string, msgs []BatchMessage) ([]int64, error) {
	if err := c.made(fn); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: %s needs a context: pass context.Background(), or one that bounds the send", store.ErrInvalid, fn)
	}
	if err := store.CheckTx(tx); err != nil {
		return nil, err
	}
	return c.sendBatch(ctx, tx, fn, queue, msgs, func(ctx context.Context, built []store.TxMessage) ([]int64, error) {
		return c.store.SendTx(ctx, tx, built)
	})
}

// sendBatch checks, observes and routes a batch for SendBatch and the
// sends in a transaction, which differ in the write (in the caller's
// transaction, or in one of the store's own) and in where they read what
// they need: in tx, the caller's transaction, when it is not nil.
func (c *Client) sendBatch(ctx context.Context, tx pgx.Tx, fn, queue string, msgs []BatchMessage, write func(context.Context, []store.TxMessage) ([]int64, error)) (ids []int64, err error) {
	if len(msgs) == 0 || len(msgs) > store.MaxBatch {
		return nil, fmt.Errorf("%w: %s: a batch holds 1 to %d messages, not %d", store.ErrInvalid, fn, store.MaxBatch, len(msgs))
	}
	if len(c.observers.list) > 0 {
		msgs = slices.Clone(msgs) // the observers' headers go on copies
		dones := make([]func(int64, error), len(msgs))
		for i := range msgs {
			msgs[i].Options, dones[i] = c.observeSend(ctx, queue, msgs[i].Options)
		}
		defer func() {
			for i, done := range dones {
				var id int64
				if err == nil {
					id = ids[i]
				}
				done(id, err)
			}
		}()
	}
	if base, ok := strings.CutSuffix(queue, store.DLQSuffix); ok && base != "" {
		return nil, fmt.Errorf("%w: queue %q is a dead-letter queue: messages reach it only by dying; send to %q instead", store.ErrInvalid, queue, base)
	}
	built := make([]store.TxMessage, len(msgs))
	for i, m := range msgs {
		nm, err := NewMessage(m.Payload, m.Options)
		if err != nil {
			if len(msgs) > 1 {
				err = &BatchMessageError{Index: i, Err: err}
			}
			return nil, err
		}
		built[i].NewMessage = nm
	}
	var now time.Time // the database server's, measured for the first deadline
	for i, m := range msgs {
		if m.Options.Deadline.IsZero() {
			continue
		}
		if now.IsZero() {
			now = c.serverNow(ctx, tx)
		}
		if err := CheckDeadline(now, m.Options); err != nil {
			if len(msgs) > 1 {
				err = &BatchMessageError{Index: i, Err: err}
			}
			return nil, err
		}
	}
	_, cached := c.sendQueues.Load(queue)
	ids, err = c.routeBatch(ctx, tx, queue, msgs, built, write)
	if cached && (errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrTxFailed) || errors.Is(err, errLevels)) {
		// As in Send: the layout read may be stale. Nothing was written,
		// and a caller's transaction is intact: the store found the queue
		// missing before writing, or its own transaction rolled back.
		c.sendQueues.Delete(queue)
		ids, err = c.routeBatch(ctx, tx, queue, msgs, built, write)
	}
	return ids, c.nameRefused(ctx, fn, built, err)
}

// nameRefused names, in err, the message of a batch whose value PostgreSQL
// refused (a number beyond what jsonb holds): the batch's statement fails
// on it without saying which, so the store is asked, message by message,
// which one it refuses; that costs a round trip on this failure only, on
// a connection made beside the pool when the pool has none free (the
// caller's aborted transaction may hold its last).
// The store's own refusal of a message (a *store.MessageError) becomes a
// *BatchMessageError holding its index. Every other refusal of a batch
// names its message already, or is the whole batch's: too many idempotency keys, or (in the caller's
// transaction, which a value refused aborts) the transaction itself.
func (c *Client) nameRefused(ctx context.Context, fn string, built []store.TxMessage, err error) error {
	if me, ok := errors.AsType[*store.MessageError](err); ok {
		// The store's refusal of one message, before anything was written.
		return &BatchMessageError{Index: me.Index, Err: me.Err}
	}
	if len(built) < 2 || !errors.Is(err, store.ErrInvalid) || fn != "SendBatch" && !errors.Is(err, store.ErrTxFailed) {
		return err
	}
	keys := map[[2]string]bool{}
	nms := make([]store.NewMessage, len(built))
	for i, m := range built {
		nms[i] = m.NewMessage
		if m.IdempotencyKey != "" {
			keys[[2]string{m.Queue, m.IdempotencyKey}] = true
		}
	}
	if len(keys) > store.MaxBatchKeys {
		return err
	}
	if i := c.store.RefusedMessage(ctx, nms); i >= 0 {
		return &BatchMessageError{Index: i, Err: err}
	}
	return err
}

// BatchMessageError is an error of SendBatch or SendBatchTx about one of
// its messages, of a batch of more than one: pgbus refused it (its
// payload does not marshal, its priority level is not the queue's), or
// PostgreSQL refused its value. A caller that sends parts of a larger
// list counts Index from its part's start.
type BatchMessageError struct {
	// Index is the message's place in msgs.
	Index int
	// Err is what is wrong with it.
	Err error
}

func (e *BatchMessageError) Error() string {
	return fmt.Sprintf("%v (the batch's message at index %d)", e.Err, e.Index)
}

func (e *BatchMessageError) Unwrap() error { return e.Err }

// routeBatch routes each message to its physical queue, reading the
// queue's layout in tx when it is not nil, and writes them.
func (c *Client) routeBatch(ctx context.Context, tx pgx.Tx, queue string, msgs []BatchMessage, built []store.TxMessage, write func(context.Context, []store.TxMessage) ([]int64, error)) ([]int64, error) {
	for i := range built {
		target, err := c.sendTarget(ctx, tx, queue, msgs[i].Options.Priority)
		if err != nil {
			// Only a refusal of the message is the message's: the queue
			// missing or the context ended is the whole batch's.
			if len(msgs) > 1 && errors.Is(err, store.ErrInvalid) {
				err = &BatchMessageError{Index: i, Err: err}
			}
			return nil, err
		}
		built[i].Queue = target
	}
	return write(ctx, built)
}
