package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Defaults of the DLQ calls, applied where a caller passes zero.
const (
	// DefaultDLQPageSize is the page size of List.
	DefaultDLQPageSize = 25
	// DefaultDLQBulkLimit bounds RetryMatching and DiscardMatching when no
	// limit is given, so that a bare "retry everything" stays a bounded
	// operation; pass a limit (up to store.MaxDeadBulk) for more.
	DefaultDLQBulkLimit = 1000
)

// DLQ is the dead-letter API that the CLI and the MCP tools call, so that a
// retry from either runs the same code. It holds the per-call defaults; the
// work is done by the store.
type DLQ struct {
	store *store.Store
}

// NewDLQ returns a DLQ over a migrated store.
func NewDLQ(s *store.Store) *DLQ { return &DLQ{store: s} }

// List returns a page of dead messages, newest first. limit 0 means
// DefaultDLQPageSize; cursor is "" for the first page, then the previous
// page's NextCursor with the same filter.
func (d *DLQ) List(ctx context.Context, f store.DeadFilter, cursor string, limit int) (store.DeadPage, error) {
	if limit == 0 {
		limit = DefaultDLQPageSize
	}
	return d.store.ListDead(ctx, f, cursor, limit)
}

// Show returns one dead message with payload, headers, block and failure
// history. queue names the DLQ or its queue.
func (d *DLQ) Show(ctx context.Context, queue string, msgID int64) (store.DeadMessage, error) {
	return d.store.ShowDead(ctx, queue, msgID)
}

// Find returns the DLQs that hold a message with id msgID.
func (d *DLQ) Find(ctx context.Context, msgID int64) ([]string, error) {
	return d.store.FindDead(ctx, msgID)
}

// Locate returns the DLQ of a message: queue's when given, else the only
// DLQ holding msgID. Ids are per queue, so an id found in several DLQs is
// an error that lists them and asks for the queue.
func (d *DLQ) Locate(ctx context.Context, queue string, msgID int64) (string, error) {
	if queue != "" {
		return queue, nil
	}
	dlqs, err := d.store.FindDead(ctx, msgID)
	if err != nil {
		return "", err
	}
	switch len(dlqs) {
	case 0:
		return "", &dlqError{kind: store.ErrNotFound, msg: fmt.Sprintf("no DLQ holds message %d; it may have been retried or discarded already: see pgbus dlq list", msgID)}
	case 1:
		return dlqs[0], nil
	}
	return "", &dlqError{kind: store.ErrInvalid, msg: fmt.Sprintf("pass queue: to choose between %d DLQs holding id %d (%s)", len(dlqs), msgID, strings.Join(dlqs, ", "))}
}

// Summary groups dead messages by (source queue, kind, error class), the
// largest group first: an investigation's first stop.
func (d *DLQ) Summary(ctx context.Context, f store.DeadFilter) ([]store.DeadGroup, error) {
	return d.store.SummarizeDead(ctx, f)
}

// SummaryReport is Summary with the number of groups, for callers that say
// when the list was cut at store.MaxDeadGroups.
func (d *DLQ) SummaryReport(ctx context.Context, f store.DeadFilter) (store.DeadSummary, error) {
	return d.store.SummarizeDeadReport(ctx, f)
}

// Retry moves dead messages of one DLQ back to the queue they died in,
// each in its own transaction.
func (d *DLQ) Retry(ctx context.Context, queue string, ids []int64, opts store.RetryOptions) (store.RetryReport, error) {
	return d.store.RetryDead(ctx, queue, ids, opts)
}

// RetryMatching retries the dead messages f selects, oldest first, up to
// limit (0: DefaultDLQBulkLimit).
func (d *DLQ) RetryMatching(ctx context.Context, f store.DeadFilter, limit int, opts store.RetryOptions) (store.RetryReport, error) {
	return d.store.RetryDeadMatching(ctx, f, dlqBulkLimit(limit), opts)
}

// Discard moves dead messages to the DLQ's archive, where they can be found
// until Purge removes them, and returns how many moved.
func (d *DLQ) Discard(ctx context.Context, queue string, ids []int64) (int, error) {
	return d.store.DiscardDead(ctx, queue, ids)
}

// DiscardMatching discards the dead messages f selects, oldest first, up to
// limit (0: DefaultDLQBulkLimit).
func (d *DLQ) DiscardMatching(ctx context.Context, f store.DeadFilter, limit int, progress ...func(done, total int)) (int, error) {
	return d.store.DiscardDeadMatching(ctx, f, dlqBulkLimit(limit), progress...)
}

// Purge deletes for good the discarded messages of one DLQ (queue "" for
// all) archived more than olderThan ago, 0 meaning all of them. Callers
// ask for an explicit confirmation before calling it.
func (d *DLQ) Purge(ctx context.Context, queue string, olderThan time.Duration) (int64, error) {
	return d.store.PurgeDead(ctx, queue, olderThan)
}

func dlqBulkLimit(limit int) int {
	if limit == 0 {
		return DefaultDLQBulkLimit
	}
	return limit
}

// dlqError is an error of a kind the store defines (store.ErrInvalid,
// store.ErrNotFound) with a message of its own.
type dlqError struct {
	kind error
	msg  string
}

func (e *dlqError) Error() string { return e.msg }
func (e *dlqError) Unwrap() error { return e.kind }
