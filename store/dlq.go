package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Limits of the dead-letter operations.
const (
	// MaxDeadPage is the largest page ListDead returns.
	MaxDeadPage = 100
	// MaxDeadBulk bounds one RetryDeadMatching or DiscardDeadMatching call.
	MaxDeadBulk = 100_000
	// MaxDeadFilterText bounds DeadFilter.Text, in characters.
	MaxDeadFilterText = 1000
	// MaxDeadFilterName bounds DeadFilter.Kind and ErrorClass, in
	// characters: a send takes a kind of up to 255 bytes, so every kind a
	// message may have can be filtered on.
	MaxDeadFilterName = 255
	// MaxRetryMoved bounds RetryReport.Moved; the rest are only counted.
	MaxRetryMoved = 100

	deadBatch  = 500 // messages per page of a bulk operation
	retryLanes = 4   // connections one retry call uses at most

	// PayloadReplacedClass is the error class of the history row that records
	// a retry with a corrected payload.
	PayloadReplacedClass = "pgbus.payload_replaced"
)

// purgeBatch is how many archived rows PurgeDead deletes per statement; a
// variable so that tests purge over several batches with few rows.
var purgeBatch = 1000

// DeadFilter selects dead messages. Zero fields select everything.
type DeadFilter struct {
	// Queue is the source queue X, meaning its DLQ X_dlq; "X_dlq" is accepted
	// too. Empty: every DLQ.
	Queue string `json:"queue,omitempty"`
	// Kind matches the pgbus_kind header, or message.job_class for messages
	// written by Ruby pgbus.
	Kind string `json:"kind,omitempty"`
	// ErrorClass and Reason match the dead-letter block exactly.
	ErrorClass string `json:"error_class,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Since (inclusive) and Until (exclusive) bound the dead-letter time.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Text is a case-insensitive substring of the block's error message,
	// which pgbus stores with its secrets redacted (Failure).
	Text string `json:"text,omitempty"`
	// Group is a group's key (DeadGroup.Group): exactly the messages of
	// that group.
	Group string `json:"group,omitempty"`
	// MinPayloadBytes, when positive, selects only the messages whose
	// payload, as JSON text, has at least that many bytes: DeadItem's
	// PayloadBytes. Every message of the DLQs is read to tell.
	MinPayloadBytes int64 `json:"min_payload_bytes,omitempty"`
	// Clock, when set, is the instant the caller counted ages in Since
	// and Until back from. ListDead signs it into its next cursor, for
	// DeadCursorClock to give back, so that every page lists the window
	// the first one did. It selects nothing itself.
	Clock time.Time `json:"-"`
}

// DeadLetterBlock is the pgbus_dead_letter header of a dead message: why it
// died, where it came from, and its last recorded failure.
type DeadLetterBlock struct {
	Version          int       `json:"version"`
	Reason           string    `json:"reason"`
	Source           string    `json:"source"`
	SourceQueue      string    `json:"source_queue"`
	SourceMsgID      int64     `json:"source_msg_id"`
	SourceEnqueuedAt time.Time `json:"source_enqueued_at,omitzero"`
	Attempts         int       `json:"attempts"`
	MaxRetries       int       `json:"max_retries"`
	DeadLetteredAt   time.Time `json:"dead_lettered_at,omitzero"`
	RetriesFromDLQ   int       `json:"retries_from_dlq,omitempty"`
	ErrorClass       string    `json:"error_class,omitempty"`
	ErrorMessage     string    `json:"error_message,omitempty"`
	Backtrace        string    `json:"backtrace,omitempty"`
	ErrorAttempt     int       `json:"error_attempt,omitempty"`
	ErrorRecordedAt  time.Time `json:"error_recorded_at,omitzero"`
	// RecordedAttempts counts the attempts of this trip (since
	// SourceEnqueuedAt) that recorded a failure, so that a list tells
	// the attempts that left no outcome without reading the history. Nil
	// in the blocks of an older pgbus or of Ruby pgbus.
	RecordedAttempts *int `json:"recorded_attempts,omitempty"`
	// PreviousTripError is the last failure recorded before this trip
	// (before SourceEnqueuedAt), kept for a message retried out of a DLQ
	// whose new trip recorded none: its error keys are absent then, since
	// nothing failed on this trip that pgbus saw. Nil otherwise, and in
	// the blocks of an older pgbus or of Ruby pgbus, whose error keys
	// describe the last failure recorded on any trip.
	PreviousTripError *BlockError `json:"previous_trip_error,omitempty"`
	// Missing marks the numbers the block lacks, or holds as null or as
	// no whole number (a block another client wrote, or edited by hand),
	// which read as 0 above: a view tells them from a 0 written. Zero in
	// a block that has them all.
	Missing BlockMissing `json:"-"`
}

// BlockMissing marks the numbers of a dead-letter block it does not hold
// (DeadLetterBlock.Missing).
type BlockMissing struct {
	Version, SourceMsgID, Attempts, MaxRetries bool
}

// blockMissing marks the numbers fields, a block's keys, lack.
func blockMissing(fields map[string]json.RawMessage) BlockMissing {
	lacks := func(key string) bool {
		var n int64
		raw, ok := fields[key]
		return !ok || string(raw) == "null" || json.Unmarshal(raw, &n) != nil
	}
	return BlockMissing{Version: lacks("version"), SourceMsgID: lacks("source_msg_id"), Attempts: lacks("attempts"), MaxRetries: lacks("max_retries")}
}

// allMissing marks every number missing: a message without a block.
var allMissing = BlockMissing{Version: true, SourceMsgID: true, Attempts: true, MaxRetries: true}

// BlockError is a recorded failure as a dead-letter block keeps it, its
// message and backtrace shortened as the block's are (BlockErrorMessage).
type BlockError struct {
	ErrorClass      string    `json:"error_class,omitempty"`
	ErrorMessage    string    `json:"error_message,omitempty"`
	ErrorAttempt    int       `json:"error_attempt,omitempty"`
	ErrorRecordedAt time.Time `json:"error_recorded_at,omitzero"`
}

// DeadItem is one dead message as ListDead shows it: its block's facts,
// without payload or backtrace (ShowDead returns those).
type DeadItem struct {
	DLQ            string    `json:"dlq"`
	MsgID          int64     `json:"msg_id"`
	Kind           string    `json:"kind,omitempty"`
	Reason         string    `json:"reason"`
	SourceQueue    string    `json:"source_queue"`
	SourceMsgID    int64     `json:"source_msg_id"`
	Attempts       int       `json:"attempts"`
	MaxRetries     int       `json:"max_retries"`
	ErrorClass     string    `json:"error_class,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty"`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	RetriesFromDLQ int       `json:"retries_from_dlq"`
	PayloadBytes   int64     `json:"payload_bytes"`
	// ErrorAttempt and RecordedAttempts are the block's
	// (DeadLetterBlock).
	ErrorAttempt     int  `json:"error_attempt,omitempty"`
	RecordedAttempts *int `json:"recorded_attempts,omitempty"`
	// Missing marks the block's numbers it lacks, all of them for a
	// message without a block (DeadLetterBlock.Missing).
	Missing BlockMissing `json:"-"`
}

// DeadPage is one page of ListDead. NextCursor is empty on the last page.
type DeadPage struct {
	Items      []DeadItem `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// DeadMessage is one dead message in full.
type DeadMessage struct {
	DLQ            string          `json:"dlq"`
	MsgID          int64           `json:"msg_id"`
	Kind           string          `json:"kind,omitempty"`
	ReadCount      int             `json:"read_ct"`
	DeadLetteredAt time.Time       `json:"dead_lettered_at"`
	Payload        json.RawMessage `json:"payload"`
	// PayloadBytes is the size of the stored payload as JSON text, read
	// whether or not Payload was.
	PayloadBytes int `json:"payload_bytes"`
	// Fields are the values of the payload fields asked for
	// (DeadRead.Fields) that the payload has, in the order asked.
	Fields []FieldRead `json:"fields,omitempty"`
	// Headers are the row's headers as stored, the block included.
	Headers json.RawMessage `json:"headers"`
	// Block is nil for a message put in the DLQ by something else than
	// pgbus (a plain pgmq.send).
	Block   *DeadLetterBlock `json:"dead_letter,omitempty"`
	History []FailureRecord  `json:"history"`
}

// DeadGroup counts the dead messages of one (source queue, kind, error
// class, error pattern).
type DeadGroup struct {
	DLQ         string `json:"dlq"`
	SourceQueue string `json:"source_queue"`
	Kind        string `json:"kind"`
	ErrorClass  string `json:"error_class"`
	// ErrorPattern is the last error message normalized as the group
	// compares it: quoted values without spaces, e-mail addresses, uuids,
	// hex strings, identifiers mixing letters and digits, and numbers
	// replaced by <str>, <email>, <uuid>, <hex>, <id> and <n>; quoted prose
	// stays, and so does a character stored as an escape (\u041e), digits
	// and all (pgbus.dlq_error_norm).
	ErrorPattern string `json:"error_pattern"`
	// Group is the group's key, for a filter that selects exactly its
	// messages (DeadFilter.Group): a uuid made of the source queue, kind,
	// error class and pattern (pgbus.dlq_cause_key).
	Group string `json:"group"`
	// ErrorMessage is the last error message of the group's newest message,
	// as stored: the caller redacts it.
	ErrorMessage string    `json:"error_message"`
	Count        int64     `json:"count"`
	FirstDeadAt  time.Time `json:"first_dead_lettered_at"`
	LastDeadAt   time.Time `json:"last_dead_lettered_at"`
	Reasons      []string  `json:"reasons"`
	SampleMsgIDs []int64   `json:"sample_msg_ids"`
	// RetriesFromDLQ counts the trips out of a DLQ the group's newest
	// message had made before this death (its block's retries_from_dlq):
	// retrying it did not fix the cause then.
	RetriesFromDLQ int `json:"retries_from_dlq"`
	// ByField breaks the group down by a payload field, when asked for.
	ByField *FieldBreakdown `json:"by_field,omitempty"`
}

// RetryOptions tune RetryDead and RetryDeadMatching.
type RetryOptions struct {
	// DryRun reports what would move and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Payload, with exactly one id, retries the message with this payload
	// instead of its own. The original message is kept in the DLQ's archive
	// and the replacement noted in its failure history.
	Payload json.RawMessage `json:"payload,omitempty"`
	// PayloadChecked says the caller checked Payload as the database reads
	// it (CheckCorrectedPayload) already: a dry run does not check it again.
	PayloadChecked bool `json:"-"`
	// Progress, when set, is called after each batch with the messages done
	// so far and the total expected.
	Progress func(done, total int) `json:"-"`
	// Began, when set, is called by RetryDeadMatching once the database
	// answered it, before it moves any message: a caller whose retry is
	// cut off after knows it was under way, and that what it did not
	// move stays in its DLQ.
	Began func() `json:"-"`
	// Expect, for RetryDeadMatching, is the token of the exact set of
	// messages the call must move (a dry run's Token, or DeadIDsToken): the
	// call moves that set in one transaction, or nothing with ErrChanged.
	Expect string `json:"expect,omitempty"`
	// ClearDeadline removes the pgbus_deadline header of the messages it
	// moves, so that they run however late it is. Without it, a message
	// whose deadline has passed on the database server's clock (Now, as
	// SyncClock last measured it) is not moved (a worker would dead-letter
	// it again without running it): it fails, saying so.
	ClearDeadline bool `json:"clear_deadline,omitempty"`
	// Trace, when set, is called for each message as it moves (not in a
	// dry run) with its DLQ, its id there and the trace context its headers
	// carry; the trace context it returns replaces those headers on the
	// moved message, and the function it returns is told the queue and id
	// the message moved to, or why it did not move. Nil leaves the headers
	// as they are. It is called from several goroutines at once.
	Trace func(ctx context.Context, dlq string, id int64, carried TraceContext) (TraceContext, func(queue string, newID int64, err error)) `json:"-"`
	// Pace, when positive, makes the moved messages visible one after
	// another, Pace apart, rather than all at once: the first at
	// PaceFrom (the database's time when zero), the next Pace later, and
	// so on in the order they move, so that a large retry reaches a
	// downstream that just came back at a rate it can take, and messages
	// sent meanwhile run between them instead of behind them all. A
	// guarded retry (Expect), whose one transaction lets none of them be
	// seen before it commits, starts no earlier than the end of its moves
	// (paceFromCommit). RetryReport.VisibleUntil is when the last becomes
	// visible.
	Pace     time.Duration `json:"pace,omitempty"`
	PaceFrom time.Time     `json:"pace_from,omitzero"`
}

// TraceContext is the W3C trace context a message's headers carry: the
// traceparent and tracestate headers, "" when absent.
type TraceContext struct {
	Traceparent string
	Tracestate  string
}

// RetryReport tells what a retry did (or, in a dry run, would do).
type RetryReport struct {
	DryRun  bool `json:"dry_run"`
	Retried int  `json:"retried"`
	// Failed counts the messages left in their DLQ by an error; Gone those
	// selected that another call retried or discarded before this one
	// could move them, which is no failure.
	Failed int `json:"failed"`
	Gone   int `json:"gone,omitempty"`
	// DeadlinesPassed counts the failures whose deadline had passed
	// (RetryOptions.ClearDeadline).
	DeadlinesPassed int `json:"deadlines_passed,omitempty"`
	// FirstError says, in words, the first failure; none for Gone.
	FirstError string `json:"first_error,omitempty"`
	// Moved lists the first MaxRetryMoved messages retried; MovedOmitted
	// counts the others.
	Moved        []RetriedMessage `json:"moved"`
	MovedOmitted int              `json:"moved_omitted,omitempty"`
	// Failures lists the first MaxRetryMoved messages that failed or were
	// gone (NotFound).
	Failures []RetryFailure `json:"failures,omitempty"`
	// Queues lists the queues messages went back to (in a dry run: would
	// go back to), each once, in the order first moved: every one, where
	// Moved lists the first MaxRetryMoved messages only.
	Queues []string `json:"queues,omitempty"`
	// Token, on a dry run of RetryDeadMatching, names the set of messages
	// selected; pass it as RetryOptions.Expect to the real call.
	Token string `json:"token,omitempty"`
	// More, for RetryDeadMatching, reports that the filter selected more
	// messages than the limit: at least one was left that the same call
	// again would select.
	More bool `json:"more,omitempty"`
	// VisibleUntil, for a paced retry (RetryOptions.Pace), is when the
	// last message moved becomes visible; zero when none moved.
	VisibleUntil time.Time `json:"visible_until,omitzero"`
	// CameBack counts the messages retried (in a dry run: that would be)
	// that had been retried out of a DLQ before and died again: that
	// retry did not fix their cause.
	CameBack int `json:"came_back,omitempty"`
	// Unsure lists the messages of a retry that stopped partway whose move
	// may or may not have committed: the connection broke, or the call
	// gave up, after the move was sent (OutcomeUnknown). They are counted
	// neither in Retried nor in Failed.
	Unsure []DeadID `json:"unsure,omitempty"`
	// SelectedUntil, for RetryDeadMatching, is the end of what it
	// selected: messages dead-lettered before it (the filter's Until, or
	// the server's time as the call began when that is earlier or none
	// was given; deadFrozen). A call that does the rest of one stopped
	// partway takes it as its Until, so that it selects the rest of the
	// same messages, not those that died since, such as those this one
	// retried that died again.
	SelectedUntil time.Time `json:"-"`

	firstErr error
	goneErr  error           // the first Gone's
	paced    int             // messages given a visibility time so far
	paceFrom time.Time       // the first one's
	queueSet map[string]bool // Queues, to add each once
}

// RetryFailure is one message a retry left in its DLQ, and why. NotFound
// is set when the message was no longer there.
type RetryFailure struct {
	DLQ      string `json:"dlq"`
	DLQMsgID int64  `json:"dlq_msg_id"`
	Error    string `json:"error"`
	// NotFound says the message had left its DLQ when it was to move:
	// another call retried or discarded it. A message whose queue is gone
	// is a failure like any other.
	NotFound bool `json:"not_found,omitempty"`
	// DeadlinePassed says the message was not moved because its deadline
	// had passed (RetryOptions.ClearDeadline).
	DeadlinePassed bool `json:"deadline_passed,omitempty"`
	// QueueGone names the queue that no longer exists for the message to
	// go back to: created again (with its priority levels), the retry
	// succeeds.
	QueueGone string `json:"queue_gone,omitempty"`
}

// RetriedMessage is one message moved out of a DLQ. MsgID is its new id in
// Queue; zero in a dry run.
type RetriedMessage struct {
	DLQ      string `json:"dlq"`
	DLQMsgID int64  `json:"dlq_msg_id"`
	Queue    string `json:"queue"`
	MsgID    int64  `json:"msg_id,omitempty"`
}

// movedRef is moved for the message of ref, made visible at its
// visibleAt (zero for at once).
func (r *RetryReport) movedRef(ref deadRef, m RetriedMessage) {
	r.moved(m)
	if ref.visibleAt.After(r.VisibleUntil) {
		r.VisibleUntil = ref.visibleAt
	}
	if ref.trips > 0 {
		r.CameBack++
	}
}

func (r *RetryReport) moved(m RetriedMessage) {
	r.Retried++
	r.addQueue(m.Queue)
	if len(r.Moved) < MaxRetryMoved {
		r.Moved = append(r.Moved, m)
	} else {
		r.MovedOmitted++
	}
}

// addQueue adds q to Queues unless it is there.
func (r *RetryReport) addQueue(q string) {
	if r.queueSet == nil {
		r.queueSet = map[string]bool{}
		for _, have := range r.Queues {
			r.queueSet[have] = true
		}
	}
	if !r.queueSet[q] {
		r.queueSet[q] = true
		r.Queues = append(r.Queues, q)
	}
}

// fail records that the message id of dlq was not moved, for err. A
// message gone when it came to move it (IsDeadGone) was there when it was
// selected: another call took it, and it counts as Gone.
func (r *RetryReport) fail(dlq string, id int64, err error) {
	gone, deadline := IsDeadGone(err), IsDeadlinePassed(err)
	if len(r.Failures) < MaxRetryMoved {
		r.Failures = append(r.Failures, RetryFailure{DLQ: dlq, DLQMsgID: id, Error: err.Error(), NotFound: gone,
			DeadlinePassed: deadline, QueueGone: goneQueue(err)})
	}
	if gone {
		r.Gone++
		r.goneErr = cmp.Or(r.goneErr, err)
		return
	}
	r.failed(dlq, id, err, deadline)
}

// missing records that id, asked for by id, was not in dlq at all: a
// failure of the call, not a race with another.
func (r *RetryReport) missing(dlq string, id int64) {
	err := deadGoneErr(dlq, id)
	if len(r.Failures) < MaxRetryMoved {
		r.Failures = append(r.Failures, RetryFailure{DLQ: dlq, DLQMsgID: id, Error: err.Error(), NotFound: true})
	}
	r.failed(dlq, id, err, false)
}

func (r *RetryReport) failed(dlq string, id int64, err error, deadline bool) {
	r.Failed++
	if deadline {
		r.DeadlinesPassed++
	}
	if r.firstErr == nil {
		r.firstErr = err
		r.FirstError = fmt.Sprintf("message %d in %s: %v", id, dlq, err)
	}
}

// DiscardOptions tune DiscardDeadSelected.
type DiscardOptions struct {
	// DryRun reports what would move and changes nothing.
	DryRun bool
	// Expect is the token of the exact set the call must move, as for
	// RetryOptions.Expect.
	Expect string
	// Progress, when set, is called after each batch with the messages done
	// so far and the total expected.
	Progress func(done, total int)
}

// DiscardReport tells what a discard by filter did (or, in a dry run,
// would do).
type DiscardReport struct {
	DryRun    bool `json:"dry_run"`
	Discarded int  `json:"discarded"`
	// Moved lists the first MaxRetryMoved messages discarded; MovedOmitted
	// counts the others.
	Moved        []DeadID `json:"moved"`
	MovedOmitted int      `json:"moved_omitted,omitempty"`
	// Gone counts the messages selected that another call retried or
	// discarded before this one could move them; they do not count toward
	// the limit.
	Gone int `json:"gone,omitempty"`
	// Token, on a dry run, names the set of messages selected.
	Token string `json:"token,omitempty"`
	// More reports that the filter selected more messages than the limit:
	// at least one was left that the same call again would select.
	More bool `json:"more,omitempty"`
	// Unsure lists the messages of a discard that stopped partway whose
	// statement may or may not have committed: the connection broke, or
	// the call gave up, after it was sent (OutcomeUnknown). They are not
	// counted in Discarded.
	Unsure []DeadID `json:"unsure,omitempty"`
	// SelectedUntil is the end of what it selected, as for
	// RetryReport.SelectedUntil: a call that does the rest of one stopped
	// partway takes it as its Until, so that it discards the rest of the
	// same messages, not those that died since, which nobody has looked at.
	SelectedUntil time.Time `json:"-"`
}

func (r *DiscardReport) add(dlq string, ids ...int64) {
	for _, id := range ids {
		r.Discarded++
		if len(r.Moved) < MaxRetryMoved {
			r.Moved = append(r.Moved, DeadID{DLQ: dlq, MsgID: id})
		} else {
			r.MovedOmitted++
		}
	}
}

// ---- names ----

// deadDLQOf turns a queue or DLQ name into the DLQ name, validated.
func deadDLQOf(name string) (string, error) {
	if err := ValidatePhysicalName(name); err != nil {
		return "", err
	}
	dlq := name
	if !strings.HasSuffix(name, DLQSuffix) {
		dlq = DLQName(name)
	}
	if err := ValidatePhysicalName(dlq); err != nil {
		return "", err
	}
	return dlq, nil
}

func deadBaseOf(dlq string) string { return strings.TrimSuffix(dlq, DLQSuffix) }

// resolveDLQ is deadDLQOf plus a check that the DLQ exists.
func (s *Store) resolveDLQ(ctx context.Context, name string) (string, error) {
	dlq, err := deadDLQOf(name)
	if err != nil {
		return "", err
	}
	existing, err := s.deadExistingQueues(ctx, []string{dlq})
	if err != nil {
		return "", err
	}
	if len(existing) == 0 {
		return "", s.dlqMissing(ctx, dlq)
	}
	return dlq, nil
}

// CheckDeadQueue returns the error an operation on the dead messages of
// queue name (orders, or its DLQ orders_dlq) gives for the name alone: a
// priority level's (LevelError, ErrInvalid) or one of a queue without a
// DLQ (ErrNotFound); nil when its DLQ exists. It only reads.
func (s *Store) CheckDeadQueue(ctx context.Context, name string) error {
	_, err := s.resolveDLQ(ctx, name)
	return err
}

// dlqMissing is the error of a DLQ that does not exist. The name of a
// priority level (orders_p1), whose messages die in the DLQ of its queue,
// is refused as invalid, naming that queue, as every other refusal of a
// level's name is; any other name is not found.
func (s *Store) dlqMissing(ctx context.Context, dlq string) error {
	name := deadBaseOf(dlq)
	if base, level, ok, err := levelOf(ctx, s.reads, name); err == nil && ok {
		return &LevelError{Queue: base, err: invalidf("queue %q is priority level %d of queue %q, not a queue of its own: its dead messages are in the DLQ of queue %q; pass queue %q",
			name, level, base, base, base)}
	}
	return notFoundf("queue %q has no dead-letter queue %q", name, dlq)
}

// LevelError is the error of a priority level's name (orders_p1) given
// for the dead messages of a queue: they are in the DLQ of Queue, the
// queue it is a level of. It is ErrInvalid.
type LevelError struct {
	Queue string
	err   error
}

func (e *LevelError) Error() string { return e.err.Error() }
func (e *LevelError) Unwrap() error { return e.err }

// deadExistingQueues returns those of names whose PGMQ queue table exists. It
// asks the catalog each time: another process may have dropped a queue.
func (s *Store) deadExistingQueues(ctx context.Context, names []string) (map[string]bool, error) {
	rows, err := s.reads.Query(ctx, `
		SELECT n FROM unnest($1::text[]) AS n
		WHERE to_regclass(format('%I.%I', 'pgmq', 'q_' || n)) IS NOT NULL`, names)
	if err != nil {
		return nil, fmt.Errorf("store: look up queues: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: look up queues: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, n := range found {
		out[n] = true
	}
	return out, nil
}

// deadQueues lists every DLQ: the PGMQ queues whose name ends in _dlq, by
// name byte by byte, whatever the database's collation, so that every
// server reads them in one order.
// Operations over all DLQs read them in one statement, so one table that
// statement cannot read would fail them all: tables without a headers
// column (PGMQ before 1.5) or that this role may not read are left out.
func (s *Store) deadQueues(ctx context.Context) ([]string, error) {
	rows, err := s.reads.Query(ctx, `
		SELECT m.queue_name FROM pgmq.meta m
		JOIN pg_class c ON c.oid = to_regclass(format('%I.%I', 'pgmq', 'q_' || m.queue_name))
		WHERE m.queue_name LIKE E'%\\_dlq'
		  AND has_table_privilege(c.oid, 'SELECT')
		  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'headers' AND NOT a.attisdropped)
		ORDER BY m.queue_name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("store: list dead-letter queues: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: list dead-letter queues: %w", err)
	}
	// Other PGMQ clients may use names our rules do not allow; leave them.
	return slices.DeleteFunc(names, func(n string) bool { return ValidatePhysicalName(n) != nil }), nil
}

// isUndefinedTable tells whether err is PostgreSQL's "relation does not
// exist": a queue dropped, or never made.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

// relationGone reports whether err is PostgreSQL failing to open a
// relation its catalog snapshot still showed (SQLSTATE XX000, "could not
// open relation with OID"): one dropped while the statement ran. It is
// told by the code alone, internal_error: the words are the server's
// language's (lc_messages), and a read that met another internal error
// meets it again when made again.
func relationGone(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "XX000"
}

// IsRelationGone reports whether err is the error PostgreSQL fails a
// statement with when a table it had found is dropped while it runs
// (SQLSTATE XX000, "could not open relation with OID" in English): a
// read over every queue made again reads the queues there are then, as
// after ErrNotFound for a table dropped before the statement. Being the
// server's internal error, it may have another cause, which the read made
// again meets again.
func IsRelationGone(err error) bool { return relationGone(err) }

// isUndefinedColumn reports whether err is PostgreSQL's undefined_column:
// a table of another shape than the statement expects.
func isUndefinedColumn(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42703"
}

func deadGoneErr(dlq string, id int64) error {
	base := deadBaseOf(dlq)
	return deadGone{notFoundf("queue %q has no DLQ message %d; it may have been retried or discarded already", base, id)}
}

// deadGone is the error of a dead message no longer in its DLQ; it is an
// ErrNotFound.
type deadGone struct{ err error }

func (e deadGone) Error() string { return e.err.Error() }
func (e deadGone) Unwrap() error { return e.err }

// deadlinePassed is the error of a dead message not moved because its
// deadline has passed; it is an ErrInvalid.
type deadlinePassed struct{ err error }

func (e deadlinePassed) Error() string { return e.err.Error() }
func (e deadlinePassed) Unwrap() error { return e.err }

// IsDeadlinePassed reports whether err says a dead message was not moved
// because its deadline has passed (see RetryOptions.ClearDeadline).
func IsDeadlinePassed(err error) bool { return errors.As(err, new(deadlinePassed)) }

// IsDeadGone reports whether err says a dead message is no longer in its
// DLQ (retried or discarded already), rather than that something else,
// such as the queue it would go back to, is missing.
func IsDeadGone(err error) bool { return errors.As(err, new(deadGone)) }
