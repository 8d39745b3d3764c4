package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// QueueStatsRequest asks for the stats of one queue, or of all when Queue
// is "".
type QueueStatsRequest struct {
	Queue string
	// NameContains lists only the queues whose names contain it, in any
	// case (a tenant's prefix among hundreds of queues); "" lists every
	// queue. It takes no Queue.
	NameContains string
	// All lists every queue even when the list passes the service's
	// response bound: for a table a person scrolls, or a watcher that
	// compares every queue, not for an agent's answer.
	All bool
	// NoArchive leaves the archives uncounted: Archived is 0. An archive
	// holds its queue's history, up to its retention, and counting it
	// takes time in proportion: for a reader that polls (a watcher, a wait
	// for the queues to empty), not for an answer.
	NoArchive bool
}

func (r QueueStatsRequest) storeOptions() store.QueueStatsOptions {
	return store.QueueStatsOptions{Archive: !r.NoArchive, TotalSent: true}
}

// QueueStatsResult holds the stats asked for.
type QueueStatsResult struct {
	Queues  []QueueStats `json:"queues" jsonschema_description:"One entry per queue, by name."`
	Omitted int          `json:"omitted,omitempty" jsonschema_description:"Queues left out so that the response stays under 16,000 characters: those needing a look least, which the notes count by dead messages, backlog, failures and pause. Pass queue to see one of them."`
	Notes   []string     `json:"notes,omitempty" jsonschema_description:"What was left out."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// QueueStats returns the stats of one queue or of every queue. A queue
// dropped while all are read is left out, not an error.
func (s *Service) QueueStats(ctx context.Context, req QueueStatsRequest) (_ QueueStatsResult, err error) {
	ctx, end, err := s.enter(ctx, "QueueStats", reads)
	if err != nil {
		return QueueStatsResult{}, err
	}
	defer end()
	defer againOnceFree(&err, OpQueueStats, "queue", req.Queue)
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return QueueStatsResult{}, err
	}
	if req.Queue != "" {
		if base, isDLQ := strings.CutSuffix(req.Queue, store.DLQSuffix); isDLQ {
			return QueueStatsResult{}, invalidf("%s is the dead-letter queue of %s: its depth is dlq_depth in the stats of %s", req.Queue, base, base).
				with(hint(OpQueueStats, "the stats of its queue", "queue", base), hint(OpDLQSummary, "its dead messages by cause", "queue", base))
		}
		if base, level, ok, err := s.store.LevelOf(ctx, req.Queue); err != nil {
			return QueueStatsResult{}, err
		} else if ok {
			// Its counts would be the queue's, or none: the last hour's
			// and the DLQ are counted per queue, not per level.
			return QueueStatsResult{}, invalidf("%s is priority level %d of queue %s, whose stats count every level: ask for those of %s; the messages of this level alone are listed by its queue's messages", req.Queue, level, base, base).
				with(hint(OpQueueStats, "the stats of its queue", "queue", base), hint(OpQueueMessages, "the messages of this level", "queue", req.Queue))
		}
		stats, err := s.store.QueueStats(ctx, req.Queue, req.storeOptions())
		list := hint(OpQueueStats, "lists the queues there are")
		if err == nil && len(stats) == 0 {
			return QueueStatsResult{}, notFoundf("queue %q does not exist", req.Queue).with(list)
		}
		out := QueueStatsResult{Queues: queueStatsList(stats)}
		if err == nil {
			noteDLQsGone(&out, s.markDLQsGone(ctx, out.Queues), out.Queues)
		}
		return out, explain(err, list)
	}
	stats, err := retryVanished(func() ([]store.QueueStats, error) {
		return s.store.QueueStats(ctx, "", req.storeOptions())
	})
	out := QueueStatsResult{Queues: queueStatsList(stats)}
	what := "queues"
	if req.NameContains != "" {
		// Names are lower case: ORDERS finds orders.
		part := strings.ToLower(req.NameContains)
		out.Queues = slices.DeleteFunc(out.Queues, func(q QueueStats) bool { return !strings.Contains(q.Queue, part) })
		what = fmt.Sprintf("queues whose names contain %q", req.NameContains)
		if err == nil && len(out.Queues) == 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("no queue's name contains %q", req.NameContains))
		}
	}
	var gone []store.QueueTablesGone
	if err == nil {
		gone = s.markDLQsGone(ctx, out.Queues)
	}
	// The notes of what the list cannot show, read before the list is
	// cut, so that the cut leaves them room.
	var more QueueStatsResult
	if err == nil && !req.NoArchive {
		// For an answer, not a reader that polls: one more read a look.
		s.noteUnreadQueues(ctx, &more)
		noteDLQsGone(&more, gone, out.Queues)
	}
	if err == nil && !req.All {
		s.fitQueueStats(&out, what, more.Notes)
	}
	out.Notes = append(out.Notes, more.Notes...)
	return out, err
}

// maxDLQGoneNotes bounds the notes of lost DLQ tables in one answer, so
// that they keep it under the response bound.
const maxDLQGoneNotes = 5

// markDLQsGone marks each of queues whose DLQ's table alone is gone,
// dropped outside pgbus, as health names it (queue_tables_missing):
// DLQMissing, as the stats read its DLQ as empty. It returns the queues
// whose tables are gone, for noteDLQsGone; a failed read marks none.
func (s *Service) markDLQsGone(ctx context.Context, queues []QueueStats) []store.QueueTablesGone {
	gone, err := s.store.QueuesWithoutTables(ctx)
	if err != nil {
		return nil
	}
	isGone := map[string]bool{}
	for _, q := range gone {
		isGone[q.Queue] = q.OnlyDLQ
	}
	for i := range queues {
		queues[i].DLQMissing = isGone[queues[i].Queue]
	}
	return gone
}

// noteDLQsGone notes on out each queue asked for whose DLQ's table alone
// is gone, of those markDLQsGone found: a queue the response bound left
// out is noted too, since nothing else in the answer would show it.
func noteDLQsGone(out *QueueStatsResult, gone []store.QueueTablesGone, asked []QueueStats) {
	isAsked := map[string]bool{}
	for _, q := range asked {
		isAsked[q.Queue] = true
	}
	var noted, more int
	for _, q := range gone {
		if !q.OnlyDLQ || !isAsked[q.Queue] {
			continue
		}
		if noted == maxDLQGoneNotes {
			more++
			continue
		}
		noted++
		out.Notes = append(out.Notes, fmt.Sprintf("queue %q: its dead-letter queue's table is gone (%s), dropped outside pgbus, so its DLQ reads as empty; "+
			"messages that fail their last attempt cannot be dead-lettered and stay in the queue: creating the queue again makes its dead-letter queue anew, "+
			"leaving the queue and its messages as they are", q.Queue, strings.Join(q.Missing, ", ")))
	}
	if more > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d more %s lost %s the same way: health lists every one (code queue_tables_missing)",
			more, plural.Of(more, "queue has", "queues have"), plural.Of(more, "its dead-letter queue's table", "their dead-letter queues' tables")))
	}
}

// noteUnreadQueues notes on out the PGMQ queues it cannot list, their
// names outside the rule pgbus reads (another PGMQ client's, made as
// pgmq.create('Orders')): left out without a word, their messages were
// nowhere to be seen. A failed read leaves the note out.
func (s *Service) noteUnreadQueues(ctx context.Context, out *QueueStatsResult) {
	all, err := s.store.ListQueues(ctx)
	if err != nil {
		return
	}
	var names []string
	for _, q := range all {
		if store.ValidatePhysicalName(q.Name) != nil {
			names = append(names, strconv.Quote(clip(q.Name, 60)))
		}
	}
	if len(names) == 0 {
		return
	}
	shown := strings.Join(names[:min(len(names), 5)], ", ")
	if len(names) > 5 {
		shown += fmt.Sprintf(" and %d more", len(names)-5)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("%s not listed: %s, whose %s outside the rule pgbus reads (lower-case letters, digits and _, at most %d characters); another PGMQ client made %s and can work %s",
		plural.Count(len(names), "PGMQ queue is", "PGMQ queues are"), shown, plural.Of(len(names), "name is", "names are"), store.MaxPhysicalNameLen,
		plural.Of(len(names), "it", "them"), plural.Of(len(names), "it", "them")))
}

// fitQueueStats leaves the quietest queues out of a list that passes the
// response bound, keeping the ones an operator acts on, still by name:
// in turns, the queue with the most dead messages, the largest backlog,
// the most failures in the last hour and a paused one, so that many
// queues of one trouble do not crowd out the worst of another. notes are
// the answer's other notes, added after the list's: they take their room.
func (s *Service) fitQueueStats(out *QueueStatsResult, what string, notes []string) {
	byName := slices.Clone(out.Queues)
	slices.SortStableFunc(byName, func(a, b QueueStats) int { return cmp.Compare(attentionRank(a), attentionRank(b)) })
	ranked := inTurns(byName, func(q QueueStats) string { return q.Queue },
		sortedBy(byName, func(q QueueStats) bool { return q.DLQDepth > 0 }, func(q QueueStats) int64 { return q.DLQDepth }),
		sortedBy(byName, func(q QueueStats) bool { return q.Visible+q.WaitingRetry > 0 }, func(q QueueStats) int64 { return q.Visible + q.WaitingRetry }),
		sortedBy(byName, func(q QueueStats) bool { return q.LastHour.Failed+q.LastHour.DeadLettered > 0 },
			func(q QueueStats) int64 { return q.LastHour.Failed + q.LastHour.DeadLettered }),
		sortedBy(byName, func(q QueueStats) bool { return q.Paused }, func(q QueueStats) int64 { return q.Depth }))
	n := fitList(s.opts.Bounds, &ranked, QueueStatsResult{Omitted: len(ranked), Notes: append([]string{strings.Repeat("x", 450)}, notes...)})
	if n == 0 {
		return
	}
	listed := make(map[string]bool, len(ranked))
	for _, q := range ranked {
		listed[q.Queue] = true
	}
	left := slices.DeleteFunc(byName, func(q QueueStats) bool { return listed[q.Queue] })
	slices.SortFunc(ranked, func(a, b QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	out.Queues, out.Omitted = ranked, n
	out.Notes, out.Asks = nil, nil
	ask(&out.Notes, &out.Asks, AskOneQueue, fmt.Sprintf("%d of the %d %s %s listed (in turns, those with the most dead messages, the largest backlogs, the most failures in the last hour, and the paused ones) so that the response stays under %d characters; %s",
		len(ranked), len(ranked)+n, what, plural.Of(len(ranked), "is", "are"), ResponseBudget, leftOutTrouble(left)), 0)
}

// leftOutTrouble says how many of the queues a list left out hold dead
// messages, have a backlog, failed in the last hour or are paused: many
// queues of one trouble crowd the others of it out of the list, and those
// left out are not all quiet ones.
func leftOutTrouble(left []QueueStats) string {
	var dead, backlog, failed, paused int
	for _, q := range left {
		if q.DLQDepth > 0 {
			dead++
		}
		if q.Visible+q.WaitingRetry > 0 {
			backlog++
		}
		if q.LastHour.Failed+q.LastHour.DeadLettered > 0 {
			failed++
		}
		if q.Paused {
			paused++
		}
	}
	var parts []string
	if dead > 0 {
		parts = append(parts, fmt.Sprintf("%d %s dead messages", dead, plural.Of(dead, "holds", "hold")))
	}
	if backlog > 0 {
		parts = append(parts, fmt.Sprintf("%d %s a backlog", backlog, plural.Of(backlog, "has", "have")))
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed in the last hour", failed))
	}
	if paused > 0 {
		parts = append(parts, fmt.Sprintf("%d %s paused", paused, plural.Of(paused, "is", "are")))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("none of the %d left out holds dead messages, has a backlog, failed in the last hour or is paused", len(left))
	}
	last := parts[len(parts)-1]
	if len(parts) > 1 {
		last = strings.Join(parts[:len(parts)-1], ", ") + " and " + last
	}
	return fmt.Sprintf("of the %d left out, %s", len(left), last)
}

// attentionRank orders queues by how much they need an operator: dead
// messages or failures first, then a backlog or a pause, then the rest.
func attentionRank(q QueueStats) int {
	switch {
	case q.DLQDepth > 0 || q.WaitingRetry > 0 || q.LastHour.Failed > 0 || q.LastHour.DeadLettered > 0:
		return 0
	case q.Visible > 0 || q.Paused:
		return 1
	}
	return 2
}

// byAttention orders queues as an operator on call reads them: by
// attentionRank, the most dead messages then the largest backlog first
// within a rank, then by name.
func byAttention(a, b QueueStats) int {
	return cmp.Or(cmp.Compare(attentionRank(a), attentionRank(b)), cmp.Compare(b.DLQDepth, a.DLQDepth),
		cmp.Compare(b.Visible, a.Visible), strings.Compare(a.Queue, b.Queue))
}

// retryVanished runs fn, an operation over every queue, again when it fails
// because a queue was dropped while it ran, before one of its statements
// (not found) or during one (store.IsRelationGone): a queue that is gone
// is no reason to fail an overview.
func retryVanished[T any](fn func() (T, error)) (T, error) {
	var out T
	var err error
	for range 3 {
		if out, err = fn(); !errors.Is(err, store.ErrNotFound) && !store.IsRelationGone(err) {
			break
		}
	}
	return out, err
}

// Live message states, as QueueMessagesRequest.State takes them.
var LiveStates = []string{store.StateWaiting, store.StateInFlight, store.StateRetrying, store.StateScheduled}

// QueueMessagesRequest asks for a page of the live messages of a queue.
type QueueMessagesRequest struct {
	Queue string
	// State is one of LiveStates, or "" for all.
	State          string
	Cursor         string
	Limit          int
	IncludePayload bool
	// FullHistory lists each message's newest failures as recorded,
	// identical ones in a row not folded.
	FullHistory bool
}

// LiveMessage is one message still in its queue, with its latest failures.
type LiveMessage struct {
	Queue string `json:"queue"`
	// Priority is the message's level on a queue with priority levels.
	Priority           *int            `json:"priority,omitempty" jsonschema_description:"The message's priority level (0 is read first), on a queue with levels, whose messages of level N are in queue NAME_pN; absent for a queue without."`
	MsgID              int64           `json:"msg_id"`
	Kind               string          `json:"kind,omitempty"`
	State              string          `json:"state" jsonschema:"enum=waiting,enum=in_flight,enum=retrying,enum=scheduled"`
	HeldBy             string          `json:"held_by,omitempty" jsonschema_description:"The circuit breaker that snoozed the job while open (state scheduled, no attempt used); resetting the breaker releases it now."`
	ReadCount          int             `json:"read_ct" jsonschema_description:"Attempts so far."`
	EnqueuedAt         time.Time       `json:"enqueued_at"`
	VisibleAt          time.Time       `json:"visible_at" jsonschema_description:"When the message is (or was) next ready to run."`
	Headers            json.RawMessage `json:"headers,omitempty" jsonschema_description:"Headers, secrets redacted."`
	PayloadBytes       int             `json:"payload_bytes"`
	PayloadShown       bool            `json:"payload_shown"`
	Payload            json.RawMessage `json:"payload,omitempty" jsonschema_description:"The payload, secrets redacted; only when payload_shown and not truncated."`
	PayloadPreview     string          `json:"payload_preview,omitempty" jsonschema_description:"A payload too large to return whole, as JSON text: when payload_preview_json, the payload with the values that did not fit shortened, each marked in place with \"…[shortened: \" and what it was (of a payload over 64K characters, only its start is read: where the read stopped is marked \"…[shortened: the rest, not read in a list]\"); otherwise only its start."`
	PayloadPreviewJSON bool            `json:"payload_preview_json,omitempty" jsonschema_description:"payload_preview is valid JSON: the payload (its start, read of a payload over 64K characters) with every top-level key read, its long strings, arrays and nested objects shortened, each cut marked. Not a payload to retry with: the marks would replace the values."`
	PayloadTruncated   bool            `json:"payload_truncated,omitempty"`
	History            []Failure       `json:"history" jsonschema_description:"The newest failures, oldest first, error text redacted and shortened."`
	FailureCount       int             `json:"failure_count" jsonschema_description:"Failures recorded in all."`
	// UnrecordedCount counts the attempts of its trip (since it was sent
	// or retried out of a DLQ) that left no outcome, for a message none
	// of whose reads still runs (retrying, or waiting after a read).
	UnrecordedCount int `json:"unrecorded_count,omitempty" jsonschema_description:"Attempts that left no outcome (a lost claim, a crash), counted all the same."`
	// Unrecorded says UnrecordedCount in words, to show beside its
	// attempts as it is.
	Unrecorded string `json:"unrecorded,omitempty" jsonschema_description:"unrecorded_count in words: the reads that ended without an outcome (a crash, a lost claim)."`
}

// LiveMessages is a page of live messages.
type LiveMessages struct {
	Items      []LiveMessage `json:"items" jsonschema_description:"Live messages, oldest first; of a queue with priority levels, level 0 first (read first), then level 1, and so on."`
	NextCursor string        `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor, with the same queue and state, for the next page. Absent on the last page."`
	Notes      []string      `json:"notes" jsonschema_description:"What was hidden or shortened."`
	Next       []Hint        `json:"next" jsonschema_description:"What to do next: the next page, when there is one; running retrying messages now, when the page has some."`
	// Asks say how to see what notes say was hidden, for each front end
	// to word (WordAsks).
	Asks []Ask `json:"-"`
}

// QueueMessages lists the live messages of a queue, oldest first: of a
// queue with priority levels, of every level in the order workers read
// them, level 0 first, each message with its level; of a level named
// alone (orders_p1), of that level.
func (s *Service) QueueMessages(ctx context.Context, req QueueMessagesRequest) (_ LiveMessages, err error) {
	ctx, end, err := s.enter(ctx, "QueueMessages", reads)
	if err != nil {
		return LiveMessages{}, err
	}
	defer end()
	defer againOnceFree(&err, OpQueueMessages, "queue", req.Queue, "state", req.State, "cursor", req.Cursor, "limit", req.Limit,
		"include_payload", req.IncludePayload, "full_history", req.FullHistory)
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return LiveMessages{}, err
	}
	limit, _ := pageLimit(OpQueueMessages, req.Limit)
	// A page over the response bound is read again with fewer rows, so
	// that its next_cursor follows the last row shown; a single row still
	// over it is cut further.
	b, asked, cut := s.opts.Bounds, limit, false
	// A list reads what it shows of each payload: none when it shows
	// none, else a start, whatever size the payloads are; and that only
	// once it holds its share of the view gate, so that lists waiting for
	// theirs hold no copy of their payloads.
	read := store.LivePayloadNone
	shown := s.viewer(req.IncludePayload).showPay
	if shown {
		read = listRead(s.opts.Bounds)
	}
	listErr := func(err error) error {
		if errors.Is(err, store.ErrNotFound) {
			if dropped := s.droppedQueue(ctx, req.Queue); dropped != nil {
				return dropped
			}
		}
		if req.Cursor != "" && errors.Is(err, ErrInvalid) {
			// A cursor of another queue or state, or made up: the first
			// page of the same call.
			return explain(err, hint(OpQueueMessages, "start again from the first page", "queue", req.Queue, "state", req.State, "limit", req.Limit))
		}
		return explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	var out LiveMessages
	for step := 0; ; {
		page, err := s.store.ListLive(ctx, store.LiveFilter{Queue: req.Queue, State: req.State, PayloadChars: read, PayloadLater: shown}, req.Cursor, limit)
		if err != nil {
			return LiveMessages{}, listErr(err)
		}
		size := 0
		if shown {
			for _, m := range page.Items {
				size += m.PayloadRead
			}
		}
		release, err := s.viewShare(ctx, size, "the view of the messages of "+req.Queue, true,
			hint(OpQueueMessages, "list them again once the other views of large payloads are done", "queue", req.Queue, "state", req.State, "cursor", req.Cursor, "limit", req.Limit))
		if err != nil {
			return LiveMessages{}, err
		}
		if shown {
			if page.Items, err = s.livePayloads(ctx, page.Items, read); err != nil {
				release()
				return LiveMessages{}, listErr(err)
			}
		}
		out = s.liveView(page, req.IncludePayload, req.FullHistory, b)
		release()
		if !b.over(out) {
			break
		}
		if k := shrunkPage(b, out.Items, LiveMessages{Notes: out.Notes, NextCursor: out.NextCursor}); k > 0 && k < limit {
			limit = k
			continue
		}
		tb, ok := b.tighter(step)
		if !ok {
			break
		}
		b, cut, step = tb, true, step+1
	}
	out.Next = []Hint{}
	if limit < asked {
		shrunkNote(&out.Notes, &out.Asks, len(out.Items), asked, out.NextCursor != "")
	}
	if out.NextCursor != "" {
		// Every page with more after it says how to go on, whether or not
		// it was shortened, with the limit this page fitted in.
		out.Next = append(out.Next, hint(OpQueueMessages, "the next page", "queue", req.Queue, "state", req.State, "cursor", out.NextCursor, "limit", limit))
	}
	if slices.ContainsFunc(out.Items, func(m LiveMessage) bool { return m.State == store.StateRetrying }) {
		out.Next = append(out.Next, QueueRunNowRequest{Queue: req.Queue}.Hint("once what failed them is fixed, runs the retrying messages now instead of after their backoff"))
	}
	var held []string
	for _, m := range out.Items {
		if m.HeldBy != "" && !slices.Contains(held, m.HeldBy) {
			held = append(held, m.HeldBy)
			out.Next = append(out.Next, s.heldNext(ctx, m.HeldBy))
		}
	}
	if cut {
		ask(&out.Notes, &out.Asks, AskSmallerPage, "messages are shortened further (fewer failures, shorter payloads, headers and texts) so that the response stays under 16,000 characters", 0)
	}
	return out, nil
}

// livePayloads reads into items, a page listed without its payloads
// (store.LiveFilter.PayloadLater), as much of each payload as chars says,
// one read for each physical queue the page holds messages of. A message
// that left its queue since the page was read (done, archived or dead) is
// left out: it is no longer live.
func (s *Service) livePayloads(ctx context.Context, items []store.LiveMessage, chars int) ([]store.LiveMessage, error) {
	kept := items[:0]
	for start := 0; start < len(items); {
		queue := items[start].Queue
		end := start
		ids := []int64{}
		for ; end < len(items) && items[end].Queue == queue; end++ {
			ids = append(ids, items[end].MsgID)
		}
		read, err := s.store.LivePayloads(ctx, queue, ids, chars)
		if err != nil {
			return nil, err
		}
		for _, m := range items[start:end] {
			p, ok := read[m.MsgID]
			if !ok {
				continue
			}
			m.Payload, m.PayloadCut = p.Payload, p.Cut
			s.views.read.Add(int64(len(p.Payload)))
			kept = append(kept, m)
		}
		start = end
	}
	return kept, nil
}

// heldNext is the next step for jobs the breaker named holds: its reset,
// once its downstream is back; for a breaker someone opened by hand, a
// look at who and why instead, since only they end that window early. A
// breaker that cannot be read is offered its reset, which says so itself.
func (s *Service) heldNext(ctx context.Context, breaker string) Hint {
	if bs, err := s.store.ListBreakers(ctx, breaker); err == nil && len(bs) == 1 {
		if bs[0].State == store.BreakerClosed {
			// Closed, it releases what it held a few at a time: a reset
			// has nothing to close and would only start that over.
			return hint(OpCircuits, fmt.Sprintf("breaker %s, which holds these jobs, is closed and releases them over its cool-off (%s at most), a few at a time, so as not to meet its downstream with them all at once: each runs at its time",
				breaker, FormatAge(MaxReleaseWindow)), "name", breaker)
		}
		if o := handOpeningOf(bs[0], s.now()); o != nil && bs[0].OpenUntil != nil {
			return hint(OpCircuits, fmt.Sprintf("breaker %s, which holds these jobs, was opened by hand by %s until %s: they run when that window ends, or sooner only if whoever opened it agrees",
				breaker, o.By, bs[0].OpenUntil.UTC().Format(time.RFC3339)), "name", breaker)
		}
	}
	return CircuitResetRequest{Name: breaker}.Hint("once its downstream is back, closes the breaker that holds these jobs and releases them")
}

// droppedQueue is the error that a queue has no live messages because it
// was dropped while its DLQ holds dead messages, with where they are; nil
// when the queue is not such a queue. "Does not exist" alone sent the
// reader away from the dead messages still left of it.
func (s *Service) droppedQueue(ctx context.Context, queue string) error {
	stats, err := s.store.QueueStats(ctx, queue, store.QueueStatsOptions{})
	if err != nil || len(stats) != 1 || !stats[0].Dropped {
		return nil
	}
	q := stats[0]
	// Asked for by a priority level's name, it is the queue of the level
	// that was dropped, whose name the DLQ tools take.
	dropped := baseQueue(q.DLQ)
	return notFoundf("queue %q was dropped, so it has no live messages; its DLQ %s holds %d dead %s", dropped, q.DLQ, q.DLQDepth, plural.Of(q.DLQDepth, "message", "messages")).
		with(hint(OpDLQSummary, "its dead messages by cause", "queue", dropped), hint(OpQueueStats, "lists the queues there are"))
}

func (s *Service) liveView(page store.LivePage, asked, full bool, b Bounds) LiveMessages {
	v := s.viewerWith(asked, b)
	out := LiveMessages{Items: make([]LiveMessage, 0, len(page.Items)), NextCursor: page.NextCursor, Notes: []string{}}
	var hidden, truncated, omitted, cutRead int
	var hiddenNote string
	var askable bool
	for _, m := range page.Items {
		lm := LiveMessage{Queue: m.Queue, Priority: m.Priority, MsgID: m.MsgID, Kind: shownKind(m.Kind), State: m.State, HeldBy: m.HeldBy, ReadCount: m.ReadCount,
			EnqueuedAt: m.EnqueuedAt, VisibleAt: m.VisibleAt, PayloadBytes: m.PayloadBytes, FailureCount: len(m.History),
			UnrecordedCount: liveUnrecorded(m.State, m.ReadCount, m.EnqueuedAt, m.History)}
		lm.Unrecorded = unrecordedLabel(lm.UnrecordedCount, 0, "")
		lm.Headers, _, _ = v.headers(m.Headers)
		var pv payloadView
		if m.PayloadCut {
			pv = v.cutPayload(m.Payload, m.PayloadBytes, b.ListPayload)
			cutRead++
		} else {
			pv = v.payload(m.Payload, b.ListPayload)
		}
		lm.PayloadShown, lm.Payload, lm.PayloadPreview, lm.PayloadTruncated = pv.shown, pv.payload, pv.preview, pv.truncated
		lm.PayloadPreviewJSON = pv.previewJSON
		switch {
		case !pv.shown:
			hidden++
			hiddenNote, askable = pv.note, pv.askable
		case pv.truncated:
			truncated++
		}
		var o int
		lm.History, o = v.history(m.History, b.LiveHistory, b.LiveTraceLen, full, m.EnqueuedAt)
		if o > 0 {
			omitted++
		}
		out.Items = append(out.Items, lm)
	}
	switch {
	case hidden > 0 && askable:
		ask(&out.Notes, &out.Asks, AskPayload, hiddenNote, 0)
	case hidden > 0:
		out.Notes = append(out.Notes, hiddenNote)
	}
	if truncated > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s over %d bytes %s truncated to a preview: as JSON with long values shortened, each marked %s…], where that fits; else %s start", plural.Count(truncated, "payload", "payloads"), b.ListPayload, plural.Of(truncated, "is", "are"), ShortenedMark, plural.Of(truncated, "its", "their")))
	}
	if cutRead > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s longer than %d characters %s previewed from %s first %d only, where the read stopped marked %s",
			plural.Count(cutRead, "payload", "payloads"), listRead(s.opts.Bounds), plural.Of(cutRead, "is", "are"), plural.Of(cutRead, "its", "their"), listRead(s.opts.Bounds), readCutMark))
	}
	if omitted > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s more than %s; only the newest are listed (the failure count has the total)", plural.Count(omitted, "message has", "messages have"), plural.Count(b.LiveHistory, "failure", "failures")))
	}
	if v.cut {
		out.Notes = append(out.Notes, fmt.Sprintf("error messages and backtraces are shortened (backtraces to %d lines)", b.LiveTraceLen))
	}
	if v.redacted > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s shown as %s", plural.Count(v.redacted, "secret-looking value is", "secret-looking values are"), Redacted))
	}
	return out
}

// QueueRequest names one queue.
type QueueRequest struct {
	Queue string
}

// QueuePaused is the state of a queue after a pause or resume.
type QueuePaused struct {
	Queue   string `json:"queue"`
	Paused  bool   `json:"paused" jsonschema_description:"Whether the queue is paused now."`
	Changed bool   `json:"changed" jsonschema_description:"False when the queue already was in that state."`
	Next    []Hint `json:"next" jsonschema_description:"What to do next."`
	// Workers is set by a resume only.
	Workers *QueueWorkers `json:"workers,omitempty" jsonschema_description:"After a resume: whether a running worker serves the queue; its messages run only if one does."`
}

// QueuePause stops workers from taking a queue's messages; those running
// finish, the rest wait.
func (s *Service) QueuePause(ctx context.Context, req QueueRequest) (QueuePaused, error) {
	ctx, end, err := s.enter(ctx, "QueuePause", writesOnce)
	if err != nil {
		return QueuePaused{}, s.refusedByGate(ctx, OpQueuePause, false, req.Check, func() any { return map[string]any{"queue": req.Queue} }, err)
	}
	defer end()
	return s.setPaused(ctx, OpQueuePause, req.Queue, true)
}

// QueueResume lets workers take a paused queue's messages again.
func (s *Service) QueueResume(ctx context.Context, req QueueRequest) (QueuePaused, error) {
	ctx, end, err := s.enter(ctx, "QueueResume", writesOnce)
	if err != nil {
		return QueuePaused{}, s.refusedByGate(ctx, OpQueueResume, false, req.Check, func() any { return map[string]any{"queue": req.Queue} }, err)
	}
	defer end()
	return s.setPaused(ctx, OpQueueResume, req.Queue, false)
}

func (s *Service) setPaused(ctx context.Context, op, queue string, pause bool) (out QueuePaused, err error) {
	defer func() { s.record(ctx, op, map[string]any{"queue": queue}, out, err) }()
	defer s.explainWrite(ctx, &err, writesOnce, queueNow(queue)) // runs before the audit entry
	if err := s.checkWrite(op); err != nil {
		return QueuePaused{}, err
	}
	if err := checkWorkQueue(queue); err != nil {
		return QueuePaused{}, err
	}
	if err := s.refuseLevel(ctx, op, queue); err != nil {
		return QueuePaused{}, err
	}
	changed, err := s.store.SetPaused(ctx, queue, pause)
	if err != nil {
		return QueuePaused{}, explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	out = QueuePaused{Queue: queue, Paused: pause, Changed: changed}
	if pause {
		out.Next = []Hint{hint(OpQueueResume, "once the cause is fixed", "queue", queue)}
		return out, nil
	}
	out.Next = []Hint{hint(OpQueueStats, "watch the queue drain", "queue", queue)}
	if cov, err := s.queueCoverage(ctx, []string{queue}); err == nil {
		// Without it the resume still stands: the note is left out.
		out.Workers = &cov[0]
		if !cov[0].Served() {
			out.Next = append(s.startHints(cov[0]), out.Next...)
		}
	}
	return out, nil
}

// SettingsChange is a change to a queue's retry settings: nil fields keep
// the current value.
type SettingsChange struct {
	MaxRetries        *int           `json:"max_retries,omitempty"`
	VisibilityTimeout *time.Duration `json:"visibility_timeout,omitempty"`
	Backoff           *time.Duration `json:"backoff,omitempty"`
	BackoffMax        *time.Duration `json:"backoff_max,omitempty"`
	Jitter            *float64       `json:"jitter,omitempty"`
	Strategy          *string        `json:"strategy,omitempty"`
	DeleteOnSuccess   *bool          `json:"delete_on_success,omitempty"`
	// ArchiveRetention and DeadRetention are how long archived messages
	// and discarded dead ones are kept before retention prunes them.
	ArchiveRetention *time.Duration `json:"archive_retention,omitempty"`
	DeadRetention    *time.Duration `json:"dead_retention,omitempty"`
}

// MarshalJSON writes the durations in the words people read and the time
// grammar takes ("200ms", "7d"), as every audit entry writes its
// durations, rather than as encoding/json's bare nanoseconds.
func (c SettingsChange) MarshalJSON() ([]byte, error) {
	type plain SettingsChange
	age := func(d *time.Duration) *string {
		if d == nil {
			return nil
		}
		s := FormatAge(*d)
		return &s
	}
	// The fields below, shallower than plain's of the same names, take
	// their place.
	return json.Marshal(struct {
		plain
		VisibilityTimeout *string `json:"visibility_timeout,omitempty"`
		Backoff           *string `json:"backoff,omitempty"`
		BackoffMax        *string `json:"backoff_max,omitempty"`
		ArchiveRetention  *string `json:"archive_retention,omitempty"`
		DeadRetention     *string `json:"dead_retention,omitempty"`
	}{plain(c), age(c.VisibilityTimeout), age(c.Backoff), age(c.BackoffMax), age(c.ArchiveRetention), age(c.DeadRetention)})
}

// leftOut lists the stored values (of q) of the settings c does not give
// that a clash can involve, for an error.
func (c SettingsChange) leftOut(q store.QueueSettings) string {
	p := RetrySettings(q.Plain())
	var out []string
	for _, f := range []struct {
		given bool
		text  string
	}{
		{c.Backoff != nil, fmt.Sprintf("backoff %gs", p.RetryBackoffSeconds)},
		{c.BackoffMax != nil, fmt.Sprintf("backoff_max %gs", p.RetryBackoffMaxSeconds)},
		{c.MaxRetries != nil, fmt.Sprintf("max_retries %d", p.MaxRetries)},
		{c.VisibilityTimeout != nil, fmt.Sprintf("visibility_timeout %gs", p.VisibilityTimeoutSeconds)},
	} {
		if !f.given {
			out = append(out, f.text)
		}
	}
	return strings.Join(out, ", ")
}

// kept lists the settings c leaves out whose value in q is not the
// default's, each with both values.
func (c SettingsChange) kept(q, def store.QueueSettings) []string {
	var out []string
	for _, f := range []struct {
		given    bool
		key      string
		now, def any
	}{
		{c.MaxRetries != nil, "max_retries", q.MaxRetries, def.MaxRetries},
		{c.VisibilityTimeout != nil, "visibility_timeout", q.VisibilityTimeout, def.VisibilityTimeout},
		{c.Strategy != nil, "strategy", q.BackoffStrategy, def.BackoffStrategy},
		{c.Backoff != nil, "backoff", q.RetryBackoff, def.RetryBackoff},
		{c.BackoffMax != nil, "backoff_max", q.RetryBackoffMax, def.RetryBackoffMax},
		{c.Jitter != nil, "jitter", q.RetryBackoffJitter, def.RetryBackoffJitter},
		{c.DeleteOnSuccess != nil, "delete_on_success", q.DeleteOnSuccess, def.DeleteOnSuccess},
		{c.ArchiveRetention != nil, "archive_retention", q.ArchiveRetention, def.ArchiveRetention},
		{c.DeadRetention != nil, "dead_retention", q.DeadRetention, def.DeadRetention},
	} {
		if !f.given && f.now != f.def {
			out = append(out, fmt.Sprintf("%s %v, default %v", f.key, f.now, f.def))
		}
	}
	return out
}

// apply returns q with the change made. A backoff_max below a new backoff
// is raised to it, so that giving only a long backoff is valid.
func (c SettingsChange) apply(q store.QueueSettings) store.QueueSettings {
	if c.MaxRetries != nil {
		q.MaxRetries = *c.MaxRetries
	}
	if c.VisibilityTimeout != nil {
		q.VisibilityTimeout = *c.VisibilityTimeout
	}
	if c.Backoff != nil {
		q.RetryBackoff = *c.Backoff
		if c.BackoffMax == nil && q.RetryBackoffMax < q.RetryBackoff {
			q.RetryBackoffMax = q.RetryBackoff
		}
	}
	if c.BackoffMax != nil {
		q.RetryBackoffMax = *c.BackoffMax
	}
	if c.Jitter != nil {
		q.RetryBackoffJitter = *c.Jitter
	}
	if c.Strategy != nil {
		q.BackoffStrategy = *c.Strategy
	}
	if c.DeleteOnSuccess != nil {
		q.DeleteOnSuccess = *c.DeleteOnSuccess
	}
	if c.ArchiveRetention != nil {
		q.ArchiveRetention = *c.ArchiveRetention
	}
	if c.DeadRetention != nil {
		q.DeadRetention = *c.DeadRetention
	}
	return q
}

// QueueCreateRequest asks for a queue (and its DLQ) with settings. A queue
// that exists gets the settings given and keeps the others.
type QueueCreateRequest struct {
	Queue string
	// Priorities is the number of priority levels (2 to
	// store.MaxPriorities), 0 for a plain queue. It is fixed at creation.
	Priorities int
	Settings   SettingsChange
}

// QueueCreated is the queue after a create. Priorities is the number of
// its priority levels, those it had for a queue that existed.
type QueueCreated struct {
	Queue      string        `json:"queue"`
	DLQ        string        `json:"dlq"`
	Priorities int           `json:"priorities,omitempty"`
	Created    bool          `json:"created"`
	Changed    bool          `json:"changed"`
	Settings   RetrySettings `json:"settings"`
	// Kept lists the settings the request left out that keep a value set
	// before, other than the default, each with both ("max_retries 10,
	// default 5"): a configuration file that drops a key leaves the
	// queue's stored value, not the default.
	Kept []string `json:"kept,omitempty"`
}

// QueueCreate creates a queue and its dead-letter queue when missing and
// applies the settings given; everything is checked before anything is
// written. A queue whose tables were dropped by another client is
// repaired.
func (s *Service) QueueCreate(ctx context.Context, req QueueCreateRequest) (out QueueCreated, err error) {
	args := func() any {
		return map[string]any{"queue": req.Queue, "priorities": req.Priorities, "settings": req.Settings}
	}
	ctx, end, err := s.enter(ctx, "QueueCreate", writesInSteps)
	if err != nil {
		return out, s.refusedByGate(ctx, OpQueueCreate, false, req.Check, args, err)
	}
	defer end()
	out = QueueCreated{Queue: req.Queue, DLQ: store.DLQName(req.Queue), Priorities: req.Priorities}
	defer func() {
		if err != nil || out.Created || out.Changed {
			s.record(ctx, OpQueueCreate, args(), out, err)
		}
	}()
	defer s.explainWrite(ctx, &err, writesInSteps, queueNow(req.Queue)) // runs before the audit entry
	if err := s.checkWrite(OpQueueCreate); err != nil {
		return out, err
	}
	if err := req.Check(); err != nil {
		return out, err
	}
	cur, err := s.store.QueueSettingsOf(ctx, req.Queue)
	exists := err == nil
	stored := exists
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return out, err
	}
	if !exists {
		cur = store.DefaultQueueSettings(req.Queue)
	} else if exists, err = s.tablesExist(ctx, req.Queue); err != nil {
		return out, err
	}
	next := req.Settings.apply(cur)
	if err := next.Validate(); err != nil {
		// The clash may be with a value set long ago, which the request
		// (a configuration file without the key) never names.
		if left := req.Settings.leftOut(cur); stored && left != "" && req.Settings.apply(store.DefaultQueueSettings(req.Queue)).Validate() == nil {
			return out, invalidf("%v; queue %s exists, and the settings this leaves out keep their stored values (%s): give those too", err, req.Queue, left)
		}
		return out, explain(err)
	}
	out.Settings = RetrySettings(next.Plain())
	out.Created, out.Changed = !exists, next != cur
	if stored && req.Priorities == 0 {
		// The levels it has, fixed when it was made: the request gives
		// only settings.
		physical, err := s.store.PhysicalQueues(ctx, req.Queue)
		if err != nil {
			return out, err
		}
		if len(physical) > 1 {
			out.Priorities = len(physical)
		}
	}
	if stored {
		out.Kept = req.Settings.kept(cur, store.DefaultQueueSettings(req.Queue))
	}
	// A queue that exists gets its settings only: a role that may change
	// rows but not create tables can then start workers whose
	// configuration declares it.
	// A queue made gets its settings in the transaction that makes it:
	// workers waiting for it (dropped to be made again) never find it
	// without them.
	settled := false
	create := func(levels int) error {
		switch {
		case next != cur:
			err := s.store.CreateQueueWithSettings(ctx, levels, next)
			settled = err == nil
			return err
		case levels > 0:
			return s.store.CreatePriorityQueue(ctx, req.Queue, levels)
		default:
			return s.store.CreateQueue(ctx, req.Queue)
		}
	}
	switch {
	case req.Priorities > 0:
		err = create(req.Priorities)
	case !exists:
		err = create(0)
		if store.IsPermissionDenied(err) && !stored {
			// Another PGMQ client's queue (pgmq.create), which has no
			// settings of pgbus's: a role that may not create tables
			// works it as it is, its settings written as for any queue.
			if there, terr := s.tablesExist(ctx, req.Queue); terr == nil && there {
				if err, out.Created = s.store.RegisterQueue(ctx, req.Queue), false; err == nil {
					stepDone(ctx) // registered, it stays so whatever its settings' write does
				}
			}
		}
	}
	if store.IsPermissionDenied(err) {
		return out, s.mayNotCreate(ctx, req.Queue, err)
	}
	if err == nil && next != cur && !settled {
		err = s.store.SetQueueSettings(ctx, next)
	}
	return out, explain(err)
}

// mayNotCreate is the error of a queue whose tables the role may not
// create: err, the refusal, with the role that may.
func (s *Service) mayNotCreate(ctx context.Context, queue string, err error) error {
	if why := s.store.RefusedByEventTrigger(ctx, err); why != "" {
		return &Error{Msg: fmt.Sprintf("queue %q does not exist, and its creation was refused (%v): %s", queue, err, why),
			Err: errors.Join(store.ErrPermission, err), Hints: []Hint{hint(OpQueueCreate, "once the function may do what it does", "queue", queue)}}
	}
	owner := "the role that owns schema pgmq"
	if name, oerr := s.store.SchemaOwner(ctx, "pgmq"); oerr == nil {
		owner += " (" + name + ")"
	}
	return &Error{Msg: fmt.Sprintf("queue %q does not exist, and the database role %s may not create its tables (%v): %s creates queues, or a role it grants CREATE on schema pgmq; once one has, this role can work the queue; trying again as this role will not help",
		queue, cmp.Or(s.store.User(), "<role>"), err, owner),
		Err: errors.Join(store.ErrPermission, err), Hints: []Hint{hint(OpQueueCreate, "as "+owner, "queue", queue)}}
}

// tablesExist reports whether every table of queue is there: each
// level's and its DLQ's, queue and archive. PGMQ's register alone
// (pgmq.meta) keeps a queue whose table was dropped or renamed by hand,
// which the create then left unmade.
func (s *Service) tablesExist(ctx context.Context, queue string) (bool, error) {
	physical, err := s.store.PhysicalQueues(ctx, queue)
	if err != nil {
		return false, err
	}
	for _, name := range append(physical, store.DLQName(queue)) {
		if ok, err := s.store.QueueTablesExist(ctx, name); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// QueueDropRequest asks to drop a queue with everything in it. Confirm
// must be set: it cannot be undone.
type QueueDropRequest struct {
	Queue   string
	Confirm bool
}

// QueueDropped says what a drop removed.
type QueueDropped struct {
	Queue    string `json:"queue"`
	DLQ      string `json:"dlq"`
	Live     int64  `json:"live" jsonschema_description:"Live messages dropped."`
	Dead     int64  `json:"dead" jsonschema_description:"Dead messages dropped."`
	Archived int64  `json:"archived" jsonschema_description:"Archived messages dropped."`
	// Discarded counts the DLQ's archive: dead messages discarded, which a
	// restore brought back until the drop.
	Discarded int64 `json:"discarded" jsonschema_description:"Discarded dead messages dropped, which a restore could bring back until then."`
	// Estimated and ArchivedEstimated say Live and Archived are
	// estimates, as in QueueStats.
	Estimated         bool `json:"counts_estimated,omitempty" jsonschema_description:"True when live is an estimate: the queue held too many messages to count them (counts_estimated in its stats)"`
	ArchivedEstimated bool `json:"archived_estimated,omitempty" jsonschema_description:"True when archived is an estimate (archived_estimated in its stats)"`
}

// QueueDrop drops a queue, its archive and its dead-letter queue.
func (s *Service) QueueDrop(ctx context.Context, req QueueDropRequest) (out QueueDropped, err error) {
	ctx, end, err := s.enter(ctx, "QueueDrop", writesOnce)
	if err != nil {
		return out, s.refusedByGate(ctx, OpQueueDrop, false, confirmed(req.Check, req.Confirm), func() any { return map[string]any{"queue": req.Queue, "confirm": req.Confirm} }, err)
	}
	defer end()
	defer func() {
		s.record(ctx, OpQueueDrop, map[string]any{"queue": req.Queue, "confirm": req.Confirm}, out, err)
	}()
	defer s.explainWrite(ctx, &err, writesOnce, queueNow(req.Queue)) // runs before the audit entry
	st, err := s.destructive(ctx, OpQueueDrop, req.Queue, req.Confirm)
	if err != nil {
		return QueueDropped{}, explain(err)
	}
	first := s.readsFirst(ctx)
	discarded, err := s.discardedCount(first, st.DLQ)
	if err != nil {
		s.explainDB(first, &err, reads)
		return QueueDropped{}, sameOnceFree(err, OpQueueDrop, req.Queue, req.Confirm)
	}
	out = QueueDropped{Queue: req.Queue, DLQ: st.DLQ, Live: st.Depth, Dead: st.DLQDepth, Archived: st.Archived, Discarded: discarded,
		Estimated: st.CountsEstimated, ArchivedEstimated: st.ArchivedEstimated}
	if !req.Confirm {
		return QueueDropped{}, invalidf("dropping queue %s deletes %s%s, %s in %s (and %d discarded from it, which a restore brings back until then) and %s%d archived for good: confirm to drop them",
			req.Queue, about(st.CountsEstimated), plural.Count(st.Depth, "live message", "live messages"),
			plural.Count(st.DLQDepth, "dead message", "dead messages"), st.DLQ, discarded, about(st.ArchivedEstimated), st.Archived)
	}
	err = s.store.DropQueue(ctx, req.Queue)
	if store.IsPermissionDenied(err) {
		// Dropping a table is its owner's alone: the grants that let a
		// role work queues do not let it drop one.
		return QueueDropped{}, &Error{Msg: fmt.Sprintf("queue %q was not dropped: the database role %s may not drop its tables (%v); only their owner may, the role that owns the pgbus schemas (the one that ran the migrations): run the drop as that role",
			req.Queue, cmp.Or(s.store.User(), "<role>"), err), Err: errors.Join(store.ErrPermission, err)}
	}
	return out, explain(err, hint(OpQueueStats, "lists the queues there are"))
}

// discardedCount counts the archive of dlq: its discarded messages, and
// the originals of retries with a corrected payload. A queue made without
// a DLQ (by PGMQ alone) has none.
func (s *Service) discardedCount(ctx context.Context, dlq string) (int64, error) {
	now, err := s.store.PurgeCutoff(ctx, 0)
	if err != nil {
		return 0, err
	}
	n, err := s.store.CountPurgeable(ctx, dlq, now)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// QueuePurgeRequest asks to delete every live message of a queue (not its
// archive or DLQ). Confirm must be set.
type QueuePurgeRequest struct {
	Queue   string
	Confirm bool
}

// QueuePurged says how many messages a purge deleted.
type QueuePurged struct {
	Queue   string `json:"queue"`
	Deleted int64  `json:"deleted"`
}

// QueuePurge deletes every live message of a queue.
func (s *Service) QueuePurge(ctx context.Context, req QueuePurgeRequest) (out QueuePurged, err error) {
	ctx, end, err := s.enter(ctx, "QueuePurge", writesOnce)
	if err != nil {
		return out, s.refusedByGate(ctx, OpQueuePurge, false, confirmed(req.Check, req.Confirm), func() any { return map[string]any{"queue": req.Queue, "confirm": req.Confirm} }, err)
	}
	defer end()
	defer func() {
		s.record(ctx, OpQueuePurge, map[string]any{"queue": req.Queue, "confirm": req.Confirm}, out, err)
	}()
	defer s.explainWrite(ctx, &err, writesOnce, queueNow(req.Queue)) // runs before the audit entry
	st, err := s.destructive(ctx, OpQueuePurge, req.Queue, req.Confirm)
	if err != nil {
		return QueuePurged{}, err
	}
	if !req.Confirm {
		return QueuePurged{}, invalidf("purging queue %s deletes %s%s for good: confirm to delete %s", req.Queue, about(st.CountsEstimated), plural.Count(st.Depth, "live message", "live messages"), plural.Of(st.Depth, "it", "them"))
	}
	n, err := s.store.PurgeQueue(ctx, req.Queue)
	return QueuePurged{Queue: req.Queue, Deleted: n}, explain(err, hint(OpQueueStats, "lists the queues there are"))
}

// refuseLevel refuses op (a drop, purge, pause or resume) of a priority
// level of a queue: a level is not a queue of its own, and op of its
// queue does it to every level. The next step shows what the queue holds
// for a drop or purge, whose step would delete it all; the same op on the
// queue for a pause or resume.
func (s *Service) refuseLevel(ctx context.Context, op, queue string) error {
	base, level, ok, err := s.store.LevelOf(ctx, queue)
	if err != nil || !ok {
		return explain(err)
	}
	verb := map[string]string{OpQueueDrop: "dropped", OpQueuePurge: "purged", OpQueuePause: "paused", OpQueueResume: "resumed"}[op]
	next := hint(op, "does it to every level of "+base, "queue", base)
	if op == OpQueueDrop || op == OpQueuePurge {
		next = hint(OpQueueStats, "shows what each level of "+base+" holds", "queue", base)
	}
	return invalidf("%s is priority level %d of queue %s, not a queue of its own: a level is not %s alone; queue %s is, every level at once",
		queue, level, base, verb, base).with(next)
}

// destructive checks a drop or purge and reads the queue's stats, which
// say what it would delete: reads before the write (readsFirst), whose
// errors say that nothing was changed.
func (s *Service) destructive(ctx context.Context, op, queue string, confirm bool) (QueueStats, error) {
	ctx = s.readsFirst(ctx)
	if err := s.checkWrite(op); err != nil {
		return QueueStats{}, err
	}
	if err := checkWorkQueue(queue); err != nil {
		return QueueStats{}, err
	}
	if err := s.refuseLevel(ctx, op, queue); err != nil {
		if !carriesSteps(err) {
			s.explainDB(ctx, &err, reads)
		}
		return QueueStats{}, sameOnceFree(err, op, queue, confirm)
	}
	res, err := s.QueueStats(ctx, QueueStatsRequest{Queue: queue})
	if op == OpQueueDrop && errors.Is(err, ErrNotFound) {
		// A queue pgbus's settings list whose tables are all gone (a
		// restore that left them out): the drop forgets it, deleting
		// no message.
		if _, serr := s.store.QueueSettingsOf(ctx, queue); serr == nil {
			return QueueStats{Queue: queue, DLQ: store.DLQName(queue)}, nil
		}
	}
	if err != nil {
		return QueueStats{}, sameOnceFree(err, op, queue, confirm)
	}
	return res.Queues[0], nil
}

// sameOnceFree gives err, of the reads before a drop or purge (op) of
// queue, when they waited for another session's lock or for a connection
// of a busy pool, the same drop or purge again as its next step, rather
// than the read's own again: that is the call to make once they are free.
func sameOnceFree(err error, op, queue string, confirm bool) error {
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrLockWait) && !errors.Is(err, errPoolBusy) {
		return err
	}
	kv := []any{"queue", queue}
	if confirm {
		kv = append(kv, "confirm", true)
	}
	e.Hints = nil
	againOnceFree(&err, op, kv...)
	return err
}
