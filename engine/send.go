package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/store"
)

// MaxKindBytes bounds SendOptions.Kind. A kind names a handler, so a short
// name always does; bounded on its own, a long kind is refused as the kind
// it is, before it is put in the headers, whose bound would otherwise
// refuse the send as headers too large, naming neither.
const MaxKindBytes = 255

// SendOptions are the optional parts of a message.
type SendOptions struct {
	// Kind selects the handler (the pgbus_kind header): at most
	// MaxKindBytes bytes.
	Kind string
	// Delay postpones the first delivery, by at most store.MaxDelay (a
	// year; MaxDelay of this package bounds the delays of retries, not
	// this).
	Delay time.Duration
	// Deadline is when the message stops being worth running: past it, it is
	// dead-lettered with reason deadline_exceeded instead of running, and a
	// failure whose retry would come after it dead-letters it at once, with
	// that reason and the failure. A send (Send, SendBatch, SendTx,
	// SendBatchTx) refuses a deadline that has passed, or falls before the
	// message is first visible (once Delay ends), judged as workers judge
	// it, on the database server's clock, give or take a second.
	Deadline time.Time
	// IdempotencyKey is handed to the handler to pass downstream, and
	// makes a second send with it return the first message's id instead of
	// a duplicate while that message is live or archived within retention.
	// A queue that deletes finished messages (on_success delete) deletes
	// their keys with them. Keys are per physical queue: on a queue with
	// priority levels, per level.
	IdempotencyKey string
	// Headers are extra headers; keys starting with pgbus_ are reserved.
	Headers map[string]any
	// Priority picks the level of a queue created with priority levels:
	// 0, the default, is read first. It must be 0 for a plain queue.
	Priority int
}

// Send enqueues one message on queue, or for a queue with priority levels
// on its level opts.Priority, and returns its id. Ids are per physical
// queue: on a queue with levels, each level counts its own, so a message
// is named by its level and its id (Job.Queue is the level's queue, such
// as jobs_p1). payload is marshalled to
// JSON unless it already is JSON (json.RawMessage or []byte). A nil ctx
// is refused with store.ErrInvalid. A database that does not answer or
// takes no more connections fails it with an error wrapping
// store.ErrUnavailable (ops.ErrUnavailable is the same): the same send
// may succeed once the database is back. ctx's own deadline passing
// wraps context.DeadlineExceeded instead.
func (c *Client) Send(ctx context.Context, queue string, payload any, opts SendOptions) (id int64, err error) {
	id, _, err = c.sendOrFind(ctx, "Send", queue, payload, opts)
	return id, err
}

// SendOrFind is Send that also reports whether opts.IdempotencyKey was in
// force on the queue already (found): the id is then that of the message
// sent with the key before, and nothing is sent. Without a key, found is
// false.
func (c *Client) SendOrFind(ctx context.Context, queue string, payload any, opts SendOptions) (id int64, found bool, err error) {
	return c.sendOrFind(ctx, "SendOrFind", queue, payload, opts)
}

// sendOrFind is Send and SendOrFind, fn naming the one called.
func (c *Client) sendOrFind(ctx context.Context, fn, queue string, payload any, opts SendOptions) (id int64, found bool, err error) {
	if err := c.made(fn); err != nil {
		return 0, false, err
	}
	if ctx == nil {
		// Refused here, not as a nil dereference deep in the driver.
		return 0, false, fmt.Errorf("%w: %s needs a context: pass context.Background(), or one that bounds the send", store.ErrInvalid, fn)
	}
	if len(c.observers.list) > 0 {
		var done func(int64, error)
		opts, done = c.observeSend(ctx, queue, opts)
		defer func() { done(id, err) }()
	}
	if base, ok := strings.CutSuffix(queue, store.DLQSuffix); ok && base != "" {
		return 0, false, fmt.Errorf("%w: queue %q is a dead-letter queue: messages reach it only by dying; send to %q instead", store.ErrInvalid, queue, base)
	}
	m, err := NewMessage(payload, opts)
	if err != nil {
		return 0, false, err
	}
	if !opts.Deadline.IsZero() {
		if err := CheckDeadline(c.serverNow(ctx, nil), opts); err != nil {
			return 0, false, err
		}
	}
	_, cached := c.sendQueues.Load(queue)
	id, found, err = c.sendTo(ctx, queue, opts.Priority, m)
	if cached && (errors.Is(err, store.ErrNotFound) || errors.Is(err, errLevels)) {
		// The queue may have been dropped and made again, with other
		// levels, since its layout was read: read it again, once.
		c.sendQueues.Delete(queue)
		id, found, err = c.sendTo(ctx, queue, opts.Priority, m)
	}
	return id, found, err
}

func (c *Client) sendTo(ctx context.Context, queue string, priority int, m store.NewMessage) (int64, bool, error) {
	target, err := c.sendTarget(ctx, nil, queue, priority)
	if err != nil {
		return 0, false, err
	}
	return c.store.SendOrFind(ctx, target, m)
}

// errLevels marks a send whose priority the queue's levels do not have.
var errLevels = errors.New("priority out of the queue's levels")

// PriorityLevelsError is the refusal (store.ErrInvalid) of a send with a
// priority that its queue, one with priority levels, does not have, for a
// caller that words it as its own: Levels is how many the queue has (0 to
// Levels-1).
type PriorityLevelsError struct {
	Queue            string
	Levels, Priority int
}

func (e *PriorityLevelsError) Error() string {
	return fmt.Sprintf("%v: queue %q has priority levels 0 to %d, not %d: give one of them (0 runs first)", store.ErrInvalid, e.Queue, e.Levels-1, e.Priority)
}

func (e *PriorityLevelsError) Unwrap() []error { return []error{store.ErrInvalid, errLevels} }

// ErrNoPriorityLevels marks the refusal (store.ErrInvalid) of a send with
// a priority other than 0 to a queue without priority levels, for a
// caller that words it as its own.
var ErrNoPriorityLevels = errors.New("priority given to a queue without priority levels")

// sendLayout is the physical queues of a send target, as read at read.
type sendLayout struct {
	physical []string
	read     time.Time
}

// sendLayoutFresh is how long a send target's layout is used before it is
// read again. A client that runs workers checks it every settings refresh;
// one that only sends would otherwise keep a dropped queue's levels for
// good, and, once a plain queue took a level's name, send there without
// an error.
const sendLayoutFresh = 5 * time.Second

// sendTarget picks the physical queue of a send: the queue itself, or its
// sub-queue of the given priority level. A layout read over sendLayoutFresh
// ago is read again: in tx, for a send in the caller's transaction, which
// may hold the last connection of a pool the caller shares with the
// store; else on the store's pool.
func (c *Client) sendTarget(ctx context.Context, tx pgx.Tx, queue string, priority int) (string, error) {
	cached, ok := c.sendQueues.Load(queue)
	if ok && time.Since(cached.(sendLayout).read) > sendLayoutFresh {
		ok = false
	}
	if !ok {
		list, err := c.readLayout(ctx, tx, queue)
		if err != nil {
			return "", err
		}
		cached = sendLayout{physical: list, read: time.Now()}
		c.sendQueues.Store(queue, cached)
	}
	list := cached.(sendLayout).physical
	switch {
	case len(list) > 1 && (priority < 0 || priority >= len(list)):
		return "", &PriorityLevelsError{Queue: queue, Levels: len(list), Priority: priority}
	case len(list) == 1 && priority != 0:
		return "", fmt.Errorf("%w: queue %q has no priority levels; send with priority 0 or create it with levels%w", store.ErrInvalid, queue, quiet{errors.Join(errLevels, ErrNoPriorityLevels)})
	}
	return list[max(priority, 0)], nil
}

// readLayout reads the physical queues of a send target, in tx when it is
// not nil, refusing a priority level's name.
func (c *Client) readLayout(ctx context.Context, tx pgx.Tx, queue string) ([]string, error) {
	var list []string
	var base string
	var level int
	if tx != nil {
		l, err := c.store.LayoutInTx(ctx, tx, queue)
		if err != nil {
			return nil, err
		}
		list, base, level = l.Physical, l.Base, l.Level
	} else {
		var err error
		if list, err = c.store.PhysicalQueues(ctx, queue); err != nil {
			return nil, err
		}
		if len(list) == 1 {
			b, lv, isLevel, err := c.store.LevelOf(ctx, queue)
			if err != nil {
				return nil, err
			}
			if isLevel {
				base, level = b, lv
			}
		}
	}
	if len(list) == 1 && base != "" {
		// A level's name reads as a queue without levels: the send
		// would go to that level whatever its priority said.
		return nil, fmt.Errorf("%w: queue %q is priority level %d of queue %q: send to %s with priority %d", store.ErrInvalid, queue, level, base, base, level)
	}
	return list, nil
}

// NewMessage builds the store message for a payload and options, checking
// them; the CLI and tools send through it too.
func NewMessage(payload any, opts SendOptions) (store.NewMessage, error) {
	var body []byte
	switch p := payload.(type) {
	case json.RawMessage:
		body = p
	case []byte: // raw JSON, not a byte string to base64
		body = p
	default:
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return store.NewMessage{}, fmt.Errorf("%w: payload does not marshal to JSON: %v", store.ErrInvalid, err)
		}
		// Marshal writes invalid UTF-8 as U+FFFD without a word: the
		// message would carry other text than was given. Only a body
		// with that character can have had such a string.
		if bytes.Contains(body, []byte(`\ufffd`)) || bytes.Contains(body, []byte(string(utf8.RuneError))) {
			if where := invalidUTF8(reflect.ValueOf(payload), "$"); where != "" {
				return store.NewMessage{}, fmt.Errorf("%w: payload cannot be stored: the string at %s is not valid UTF-8, which JSON cannot carry; send text as UTF-8, or binary data encoded (base64 in a []byte field)", store.ErrInvalid, where)
			}
		}
	}
	if why := store.CheckText(opts.Kind); why != "" {
		return store.NewMessage{}, fmt.Errorf("%w: kind cannot be stored: %s", store.ErrInvalid, why)
	}
	if err := checkKindBytes(opts.Kind); err != nil {
		return store.NewMessage{}, err
	}
	headers := make(map[string]any, len(opts.Headers)+3)
	for k, v := range opts.Headers {
		if why := store.CheckText(k); why != "" {
			return store.NewMessage{}, fmt.Errorf("%w: header key %q cannot be stored: %s", store.ErrInvalid, k, why)
		}
		if why := store.CheckValueText(v); why != "" {
			return store.NewMessage{}, fmt.Errorf("%w: header %q cannot be stored: %s", store.ErrInvalid, k, why)
		}
		if len(k) >= 6 && k[:6] == "pgbus_" {
			return store.NewMessage{}, fmt.Errorf("%w: header %q: keys starting with pgbus_ are reserved; use SendOptions fields instead", store.ErrInvalid, k)
		}
		headers[k] = v
	}
	if opts.Kind != "" {
		headers[store.HeaderKind] = opts.Kind
	}
	if !opts.Deadline.IsZero() {
		// A year outside 1..9999 has no RFC 3339 form a worker can read:
		// written anyway, the message would run as if it had no deadline.
		if y := opts.Deadline.UTC().Year(); y < 1 || y > 9999 {
			return store.NewMessage{}, fmt.Errorf("%w: deadline %s is not a time a message can carry (years 1 to 9999); give a real deadline, or none", store.ErrInvalid, opts.Deadline.UTC().Format(time.RFC3339))
		}
		headers[store.HeaderDeadline] = opts.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if opts.IdempotencyKey != "" {
		headers[store.HeaderIdempotencyKey] = opts.IdempotencyKey
	}
	m := store.NewMessage{Payload: body, Delay: opts.Delay, IdempotencyKey: opts.IdempotencyKey}
	if len(headers) > 0 {
		h, err := json.Marshal(headers)
		if err != nil {
			return store.NewMessage{}, fmt.Errorf("%w: headers do not marshal to JSON: %v", store.ErrInvalid, err)
		}
		m.Headers = h
	}
	return m, nil
}

// deadlineSlack is how far a message's deadline may fall before the moment
// it is first visible (now, or once its delay ends) and the send still be
// taken. Sends judge deadlines on the database server's clock, as workers
// do (store.Now), each process by its own measure of it: the slack covers
// the error of those measures (half a round trip each) and a host's clock
// moved since, so that a send is never refused for a deadline a worker
// would find met. A deadline within the slack is sent, and dead-lettered
// unrun if it is missed.
const deadlineSlack = time.Second

// Sends with a deadline measure the database server's clock when it was
// last measured over clockSyncEvery ago (a client that never ran, or a
// store shared with no running client, has not): clockSyncWait bounds the
// measure, which the send itself would otherwise wait on twice when the
// database does not answer.
const (
	clockSyncEvery = time.Minute
	clockSyncWait  = 2 * time.Second
)

// serverNow is the database server's time, as store.Now gives it once
// measured within clockSyncEvery. A measure that fails keeps the last
// (none: this host's clock): the send then says what is wrong.
//
// A send in the caller's transaction tx (not nil) measures it in tx, which
// may hold the last connection of a pool the caller shares with the store.
func (c *Client) serverNow(ctx context.Context, tx pgx.Tx) time.Time {
	if _, at := c.store.ClockSkew(); at.IsZero() || time.Since(at) >= clockSyncEvery {
		ctx, cancel := context.WithTimeout(ctx, clockSyncWait)
		defer cancel()
		if tx != nil {
			_, _ = c.store.SyncClockInTx(ctx, tx)
		} else {
			_, _ = c.store.SyncClock(ctx)
		}
	}
	return c.store.Now()
}

// CheckDeadline refuses options whose deadline has passed at now (the
// database server's time), or falls before their delay ends: a worker
// would dead-letter the message as deadline_exceeded without running it.
// It is the rule the Send methods apply, with their slack for measuring
// the server's clock, for a caller that checks before sending; options
// without a deadline pass.
func CheckDeadline(now time.Time, opts SendOptions) error {
	if opts.Deadline.IsZero() {
		return nil
	}
	at := opts.Deadline.UTC().Format(time.RFC3339Nano)
	if opts.Deadline.Before(now.Add(-deadlineSlack)) {
		return fmt.Errorf("%w: deadline %s has passed (by %s on the database server's clock): the message could never run, and would be dead-lettered as deadline_exceeded; give a later deadline, or none",
			store.ErrInvalid, at, now.Sub(opts.Deadline).Round(time.Millisecond))
	}
	if visible := now.Add(max(opts.Delay, 0)); opts.Deadline.Before(visible.Add(-deadlineSlack)) {
		return fmt.Errorf("%w: deadline %s comes %s before the delay of %s ends: the message would be dead-lettered as deadline_exceeded without running; give a later deadline or a shorter delay",
			store.ErrInvalid, at, visible.Sub(opts.Deadline).Round(time.Millisecond), opts.Delay)
	}
	return nil
}

// quiet wraps an error for errors.Is and adds nothing to a message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// checkKindBytes refuses a kind longer than MaxKindBytes, in the same
// words for a send and for a handler's registration: a handler of such a
// kind could never be sent a message.
func checkKindBytes(kind string) error {
	if len(kind) > MaxKindBytes {
		return fmt.Errorf("%w: kind is %d bytes; at most %d: a kind names its handler, so give a shorter one", store.ErrInvalid, len(kind), MaxKindBytes)
	}
	return nil
}

// invalidUTF8 returns the path, from at, of the first string in v (a
// payload as Send takes it) that is not valid UTF-8, a map's keys
// included, or "" when there is none.
func invalidUTF8(v reflect.Value, at string) string {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return at
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidUTF8(v.Elem(), at)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "" // bytes: base64 in JSON
		}
		for i := range v.Len() {
			if where := invalidUTF8(v.Index(i), fmt.Sprintf("%s[%d]", at, i)); where != "" {
				return where
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			key := fmt.Sprint(it.Key().Interface())
			if where := invalidUTF8(it.Key(), at+" (a key)"); where != "" {
				return where
			}
			if where := invalidUTF8(it.Value(), at+"."+strconv.QuoteToASCII(key)); where != "" {
				return where
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				if where := invalidUTF8(v.Field(i), at+"."+f.Name); where != "" {
					return where
				}
			}
		}
	}
	return ""
}
