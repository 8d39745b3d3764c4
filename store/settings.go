package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Backoff strategies of QueueSettings.BackoffStrategy.
const (
	BackoffExponential = "exponential"
	BackoffPolynomial  = "polynomial"
)

// QueueSettings are the retry and delivery settings of one logical queue,
// kept in pgbus.queues so that every worker process shares them.
type QueueSettings struct {
	Queue              string        `json:"queue"`
	MaxRetries         int           `json:"max_retries"`
	VisibilityTimeout  time.Duration `json:"visibility_timeout"`
	BackoffStrategy    string        `json:"backoff_strategy"`
	RetryBackoff       time.Duration `json:"retry_backoff"`
	RetryBackoffMax    time.Duration `json:"retry_backoff_max"`
	RetryBackoffJitter float64       `json:"retry_backoff_jitter"`
	// DeleteOnSuccess deletes finished messages instead of archiving them.
	DeleteOnSuccess bool `json:"delete_on_success"`
	Paused          bool `json:"paused"`
	// Deadline is the default age after which a message is dead-lettered
	// with deadline_exceeded instead of running; zero for none. The age
	// counts from the send, a delay included, so the operations layer
	// refuses a send whose delay outlasts it; a message's own deadline
	// replaces it.
	Deadline time.Duration `json:"deadline"`
	// ArchiveRetention and DeadRetention are how long archived messages and
	// archived dead messages are kept before retention prunes them.
	ArchiveRetention time.Duration `json:"archive_retention"`
	DeadRetention    time.Duration `json:"dead_retention"`
}

// DefaultQueueSettings are the settings of a queue that has no row of its
// own, for example one created by another PGMQ client.
func DefaultQueueSettings(queue string) QueueSettings {
	return QueueSettings{
		Queue:              queue,
		MaxRetries:         5,
		VisibilityTimeout:  30 * time.Second,
		BackoffStrategy:    BackoffExponential,
		RetryBackoff:       5 * time.Second,
		RetryBackoffMax:    300 * time.Second,
		RetryBackoffJitter: 0.15,
		ArchiveRetention:   DefaultArchiveRetention,
		DeadRetention:      DefaultDeadRetention,
	}
}

// Default retention: archives 7 days, archived dead messages 30 days.
const (
	DefaultArchiveRetention = 7 * 24 * time.Hour
	DefaultDeadRetention    = 30 * 24 * time.Hour
)

// Validate checks settings against the bounds the schema enforces, with
// messages that say which value is wrong.
func (q QueueSettings) Validate() error {
	switch {
	case q.MaxRetries < 1 || q.MaxRetries > 1000:
		return invalidf("queue %q: max_retries %d is out of range 1..1000 (the runs a message gets; 1 runs it once, without retries)", q.Queue, q.MaxRetries)
	case q.VisibilityTimeout < time.Second || q.VisibilityTimeout > 24*time.Hour:
		return invalidf("queue %q: visibility timeout %s is out of range 1s..24h", q.Queue, q.VisibilityTimeout)
	case q.BackoffStrategy != BackoffExponential && q.BackoffStrategy != BackoffPolynomial:
		return invalidf("queue %q: backoff strategy %q: use %q or %q", q.Queue, q.BackoffStrategy, BackoffExponential, BackoffPolynomial)
	case q.RetryBackoff < 0 || q.RetryBackoff > 24*time.Hour:
		return invalidf("queue %q: retry backoff %s is out of range 0..24h", q.Queue, q.RetryBackoff)
	case q.RetryBackoffMax < 0 || q.RetryBackoffMax > 7*24*time.Hour:
		return invalidf("queue %q: retry backoff max %s is out of range 0..168h", q.Queue, q.RetryBackoffMax)
	case q.RetryBackoff > 0 && q.RetryBackoff < time.Millisecond, q.RetryBackoffMax > 0 && q.RetryBackoffMax < time.Millisecond:
		// Kept in milliseconds: stored, it would be 0, no wait at all.
		return invalidf("queue %q: retry backoff %s, max %s: a wait below a millisecond is not kept (it would be none); give 0s for no wait, or 1ms or more",
			q.Queue, q.RetryBackoff, q.RetryBackoffMax)
	case q.RetryBackoffMax < q.RetryBackoff && q.BackoffStrategy == BackoffExponential:
		// The polynomial strategy has no base: its max alone bounds it.
		return invalidf("queue %q: retry backoff max %s must be at least the backoff (%s): it caps every delay", q.Queue, q.RetryBackoffMax, q.RetryBackoff)
	case !(q.RetryBackoffJitter >= 0 && q.RetryBackoffJitter <= 1):
		return invalidf("queue %q: jitter %v is out of range 0..1", q.Queue, q.RetryBackoffJitter)
	case q.Deadline < 0 || q.Deadline > 365*24*time.Hour:
		return invalidf("queue %q: deadline %s is out of range 0 (none)..8760h", q.Queue, q.Deadline)
	case q.Deadline > 0 && q.Deadline < time.Millisecond:
		// Stored in whole milliseconds, it would be 0: no deadline at all.
		return invalidf("queue %q: deadline %s is under a millisecond, which is kept as none: give a time.Duration such as 30 * time.Second (a bare 30 is 30ns), or 0 for none",
			q.Queue, q.Deadline)
	case q.ArchiveRetention < time.Minute || q.ArchiveRetention > 3650*24*time.Hour:
		return invalidf("queue %q: archive retention %s is out of range 1m..87600h", q.Queue, q.ArchiveRetention)
	case q.DeadRetention < time.Minute || q.DeadRetention > 3650*24*time.Hour:
		return invalidf("queue %q: dead retention %s is out of range 1m..87600h", q.Queue, q.DeadRetention)
	}
	return nil
}

const settingsColumns = `queue_name, max_retries, visibility_timeout_ms, backoff_strategy, retry_backoff_ms,
	retry_backoff_max_ms, retry_backoff_jitter, on_success = 'delete', paused,
	coalesce(deadline_ms, 0), archive_retention_ms, dead_retention_ms`

func scanSettings(r pgx.CollectableRow) (QueueSettings, error) {
	var q QueueSettings
	var vt, base, maxB, deadline, archive, dead int64
	err := r.Scan(&q.Queue, &q.MaxRetries, &vt, &q.BackoffStrategy, &base, &maxB, &q.RetryBackoffJitter, &q.DeleteOnSuccess, &q.Paused,
		&deadline, &archive, &dead)
	q.Deadline = time.Duration(deadline) * time.Millisecond
	q.ArchiveRetention = time.Duration(archive) * time.Millisecond
	q.DeadRetention = time.Duration(dead) * time.Millisecond
	q.VisibilityTimeout = time.Duration(vt) * time.Millisecond
	q.RetryBackoff = time.Duration(base) * time.Millisecond
	q.RetryBackoffMax = time.Duration(maxB) * time.Millisecond
	return q, err
}

// AllQueueSettings returns the settings of every logical queue pgbus created.
func (s *Store) AllQueueSettings(ctx context.Context) (map[string]QueueSettings, error) {
	rows, err := s.reads.Query(ctx, `SELECT `+settingsColumns+` FROM pgbus.queues`)
	if err != nil {
		return nil, fmt.Errorf("store: read queue settings: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanSettings)
	if err != nil {
		return nil, fmt.Errorf("store: read queue settings: %w", err)
	}
	out := make(map[string]QueueSettings, len(list))
	for _, q := range list {
		out[q.Queue] = q
	}
	return out, nil
}

// QueueSettingsOf returns the settings of one logical queue, or ErrNotFound.
func (s *Store) QueueSettingsOf(ctx context.Context, queue string) (QueueSettings, error) {
	if err := ValidateQueueName(queue); err != nil {
		return QueueSettings{}, err
	}
	rows, err := s.reads.Query(ctx, `SELECT `+settingsColumns+` FROM pgbus.queues WHERE queue_name = $1`, queue)
	if err != nil {
		return QueueSettings{}, fmt.Errorf("store: read settings of queue %q: %w", queue, err)
	}
	q, err := pgx.CollectExactlyOneRow(rows, scanSettings)
	if err == pgx.ErrNoRows {
		return q, notFoundf("queue %q does not exist", queue)
	}
	if err != nil {
		return q, fmt.Errorf("store: read settings of queue %q: %w", queue, err)
	}
	return q, nil
}

// SetQueueSettings stores the settings of an existing logical queue.
func (s *Store) SetQueueSettings(ctx context.Context, q QueueSettings) error {
	if err := ValidateQueueName(q.Queue); err != nil {
		return err
	}
	if err := q.Validate(); err != nil {
		return err
	}
	affected, err := updateSettings(ctx, s.db, q)
	if err != nil {
		return err
	}
	if affected == 0 {
		return notFoundf("queue %q does not exist; create it first", q.Queue)
	}
	return nil
}

// SetPaused pauses or resumes a logical queue: workers do not read a paused
// queue. It reports whether the state changed.
func (s *Store) SetPaused(ctx context.Context, queue string, paused bool) (bool, error) {
	if err := ValidateQueueName(queue); err != nil {
		return false, err
	}
	var was bool
	// A queue whose tables were dropped outside pgbus keeps its row: it is
	// not one to pause.
	err := s.db.QueryRow(ctx, `UPDATE pgbus.queues n SET paused = $2, updated_at = now()
		FROM pgbus.queues o WHERE n.queue_name = $1 AND o.queue_name = n.queue_name
		  AND EXISTS (SELECT FROM generate_series(0, greatest(n.priorities, 1) - 1) AS p
		              WHERE to_regclass(format('pgmq.%I', 'q_' || CASE WHEN n.priorities = 0 THEN $1 ELSE $1 || '_p' || p END)) IS NOT NULL)
		RETURNING o.paused`, queue, paused).Scan(&was)
	if err == pgx.ErrNoRows {
		return false, notFoundf("queue %q does not exist", queue)
	}
	if err != nil {
		return false, fmt.Errorf("store: pause queue %q: %w", queue, err)
	}
	return was != paused, nil
}

// updateSettings writes the settings q of a registered queue through db
// and returns how many rows it changed: 0 when the queue is not
// registered.
func updateSettings(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, q QueueSettings) (int64, error) {
	onSuccess := "archive"
	if q.DeleteOnSuccess {
		onSuccess = "delete"
	}
	tag, err := db.Exec(ctx, `UPDATE pgbus.queues SET max_retries = $2, visibility_timeout_ms = $3,
		backoff_strategy = $4, retry_backoff_ms = $5, retry_backoff_max_ms = $6, retry_backoff_jitter = $7,
		on_success = $8, paused = $9, deadline_ms = nullif($10, 0), archive_retention_ms = $11, dead_retention_ms = $12,
		updated_at = now() WHERE queue_name = $1`,
		q.Queue, q.MaxRetries, q.VisibilityTimeout.Milliseconds(), q.BackoffStrategy, q.RetryBackoff.Milliseconds(),
		q.RetryBackoffMax.Milliseconds(), q.RetryBackoffJitter, onSuccess, q.Paused,
		q.Deadline.Milliseconds(), q.ArchiveRetention.Milliseconds(), q.DeadRetention.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("store: update settings of queue %q: %w", q.Queue, err)
	}
	return tag.RowsAffected(), nil
}
