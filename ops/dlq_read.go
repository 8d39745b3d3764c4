package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// DLQSummaryRequest asks for the dead messages a filter selects, grouped.
type DLQSummaryRequest struct {
	Filter DeadFilter
	// ByField, one of Options.SafeFields, breaks each group down by the
	// values of that payload field.
	ByField string
	// All lists every group the store returns (the largest
	// store.MaxDeadGroups) even when they pass the service's response
	// bound: for a page a person scrolls, or a watcher that compares
	// every group, not for an agent's answer.
	All bool
	// By is one of SummaryBys: SummaryByGroup ("" too), or
	// SummaryByErrorClass for every dead message the filter selects
	// counted by error class across the DLQs (DLQSummary.Classes), which
	// takes neither ByField nor Cursor.
	By string
	// Cursor is the previous page's NextCursor, with the same filter; ""
	// for the first page. A page lists the groups ranked after the last
	// group of the page before, as they rank now: groups change between
	// pages (deaths, retries, discards), so one that grew past it since is
	// not listed again, one that shrank past it is; over groups that do
	// not change, the pages list each group once, and end.
	Cursor string
}

// DeadGroup counts the dead messages of one (DLQ, source queue, kind,
// error class, error pattern).
type DeadGroup struct {
	DLQ          string    `json:"dlq"`
	SourceQueue  string    `json:"source_queue"`
	Kind         string    `json:"kind" jsonschema_description:"The job kind (pgbus_kind header, or job_class of Ruby pgbus). Empty when the messages have neither: the kind filter cannot select those alone (an empty kind selects every kind), so narrow by queue, error_class and text, or act on the sample_msg_ids."`
	ErrorClass   string    `json:"error_class" jsonschema_description:"Empty when no failure was recorded (the worker crashed)."`
	ErrorPattern string    `json:"error_pattern" jsonschema_description:"The last error message as the group compares it: quoted values without spaces, e-mail addresses, uuids, hex strings, identifiers mixing letters and digits, and numbers replaced by <str>, <email>, <uuid>, <hex>, <id> and <n>, so messages differing only by such values are one group; quoted prose stays. Secrets redacted."`
	Group        string    `json:"group" jsonschema_description:"The group's key: pass it as group to pgbus_dlq_list, pgbus_dlq_retry or pgbus_dlq_discard to select exactly this group's messages (kind and error_class select every group that shares them)."`
	ErrorMessage string    `json:"error_message" jsonschema_description:"The last error message of the group's newest message (sample_msg_ids[0]), secrets redacted, shortened."`
	Count        int64     `json:"count"`
	FirstDeadAt  time.Time `json:"first_dead_lettered_at"`
	LastDeadAt   time.Time `json:"last_dead_lettered_at"`
	Reasons      []string  `json:"reasons" jsonschema_description:"Why the group's messages died; not_recorded: reason not recorded (no dead-letter block)."`
	SampleMsgIDs []int64   `json:"sample_msg_ids" jsonschema_description:"Up to 5 ids in dlq, newest first."`
	// RetriesFromDLQ is how often the group's newest message had been
	// retried out of a DLQ before it died this time.
	RetriesFromDLQ int             `json:"retries_from_dlq,omitempty" jsonschema_description:"How often the group's newest message had been retried out of a DLQ before it died again: a retry did not fix the cause then. Absent when never."`
	ByField        *FieldBreakdown `json:"by_field,omitempty" jsonschema_description:"The group's messages by the value of the safe field by_field named; present only then."`
}

// summaryFewer is how a summary counts fewer messages, as the advice of a
// limit that cut it off says it: it has no limit to lower.
const summaryFewer = "narrow the summary to fewer dead messages: one queue, a shorter time, a kind or an error class"

// DLQSummary is the result of DLQSummary.
type DLQSummary struct {
	Groups []DeadGroup `json:"groups" jsonschema_description:"Dead messages grouped by (dlq, source queue, kind, error class, error pattern), largest group first, each with a representative error message and up to 5 sample ids, newest first."`
	// Classes, of a summary by error class, count its dead messages by
	// error class across the DLQs, the largest first; Groups is empty then.
	Classes      []DeadClass `json:"classes,omitempty" jsonschema_description:"With by error_class: dead messages by error class across every DLQ, largest first, each with its reasons and the DLQs it touches; groups is empty then."`
	TotalClasses int         `json:"total_classes,omitempty" jsonschema_description:"With by error_class: the error classes the filters select, those left out included."`
	Total        int64       `json:"total" jsonschema_description:"Dead messages in the groups (or classes) listed; messages_omitted counts those left out."`
	TotalGroups  int         `json:"total_groups" jsonschema_description:"Groups the filters select, those of other pages included."`
	Truncated    bool        `json:"truncated,omitempty" jsonschema_description:"More groups follow this page: notes says what they hold, next_cursor is the next page."`
	// MessagesOmitted counts the dead messages of the groups not listed
	// on this page, those of earlier pages included.
	MessagesOmitted int64 `json:"messages_omitted,omitempty" jsonschema_description:"Dead messages in the groups not listed on this page: total plus messages_omitted is every dead message the filters select."`
	// NextCursor, set when groups follow this page, asks for them
	// (DLQSummaryRequest.Cursor).
	NextCursor string   `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor, with the same filters, for the next page. Absent on the last page."`
	Notes      []string `json:"notes" jsonschema_description:"What was shortened or hidden."`
	Next       []Hint   `json:"next" jsonschema_description:"What to do next."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// summaryOmittedRoom is what a summary that leaves groups out keeps free
// in its response for the note that says so and the next steps to them,
// which repeat the filter (up to five times), and for its next cursor,
// which the next page's step repeats.
func summaryOmittedRoom(f DeadFilter) int {
	b, _ := json.Marshal(f)
	return 1200 + 5*len(b) + 2*summaryCursorRoom
}

// summaryCursorRoom bounds the characters of a summary's cursor.
const summaryCursorRoom = 400

// summaryFit returns how many of out's groups fit the response bound, or 0
// when all do or all were asked for.
func (s *Service) summaryFit(req DLQSummaryRequest, out DLQSummary) int {
	if req.All {
		return 0
	}
	return shrunkPage(s.opts.Bounds, out.Groups, DLQSummary{Notes: out.Notes, Next: []Hint{{Why: strings.Repeat("x", 400+summaryOmittedRoom(req.Filter))}}})
}

// redactPatterns makes the pattern of each group whose message holds a
// secret from the message with its secrets redacted: the stored pattern
// replaced the key ("password" became <str>) and kept a value quoted with
// spaces in it, which redacting the pattern itself would then miss.
func (s *Service) redactPatterns(ctx context.Context, groups []store.DeadGroup) error {
	var at []int
	var msgs []string
	for i, g := range groups {
		if red, n := RedactText(g.ErrorMessage); n > 0 {
			at, msgs = append(at, i), append(msgs, red)
		}
	}
	pats, err := s.store.ErrorPatterns(ctx, msgs)
	if err != nil {
		return err
	}
	for j, i := range at {
		groups[i].ErrorPattern = pats[j]
	}
	return nil
}

// DLQSummary groups the dead messages the filter selects by source queue,
// kind, error class and error pattern, largest group first: an
// investigation's first stop.
func (s *Service) DLQSummary(ctx context.Context, req DLQSummaryRequest) (_ DLQSummary, err error) {
	ctx, end, err := s.enter(ctx, "DLQSummary", reads)
	if err != nil {
		return DLQSummary{}, err
	}
	defer end()
	// A summary has no limit: it counts fewer messages by a narrower filter.
	ctx = withFewer(ctx, summaryFewer)
	defer againOnceFree(&err, OpDLQSummary, req.Filter.hintArgs("by", req.byArg(), "by_field", req.ByField, "cursor", req.Cursor)...)
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return DLQSummary{}, err
	}
	// The first page of this call's filters, all of them: with the queue
	// alone it would count other groups.
	again := hint(OpDLQSummary, "start again from the first page", req.Filter.hintArgs("by_field", req.ByField)...)
	now, err := s.pageClock(ctx, req.Cursor, s.store.SummaryCursorClock)
	if err != nil {
		return DLQSummary{}, explain(err, again)
	}
	f, err := req.Filter.resolve(now)
	if err != nil {
		return DLQSummary{}, err
	}
	if req.Filter.relative() {
		f.Clock = now
	}
	if req.byClass() {
		return s.summaryByClass(ctx, req, f)
	}
	path, err := s.byFieldPath(req.ByField)
	if err != nil {
		return DLQSummary{}, err
	}
	sum, err := s.store.SummarizeDeadWith(ctx, f, store.SummaryOptions{ByField: path, Cursor: req.Cursor})
	if err != nil {
		if errors.Is(err, ErrNotFound) || req.Cursor == "" {
			return DLQSummary{}, explain(err, queueHint(err, OpDLQSummary))
		}
		return DLQSummary{}, explain(err, again)
	}
	gone := false
	if len(sum.Groups) == 0 && req.Cursor == "" {
		if gone, err = s.groupScope(ctx, f); err != nil {
			return DLQSummary{}, err
		}
	}
	if err := s.redactPatterns(ctx, sum.Groups); err != nil {
		return DLQSummary{}, err
	}
	v := s.viewer(false)
	out := DLQSummary{Groups: make([]DeadGroup, len(sum.Groups)), TotalGroups: sum.TotalGroups, Truncated: sum.Truncated, Notes: []string{}, Next: []Hint{}}
	for i, g := range sum.Groups {
		out.Groups[i] = DeadGroup{DLQ: g.DLQ, SourceQueue: g.SourceQueue, Kind: shownKind(g.Kind), ErrorClass: v.class(g.ErrorClass), Group: g.Group,
			ErrorPattern: v.errorText(g.ErrorPattern, s.opts.Bounds.ListErrorChars), ErrorMessage: v.errorText(g.ErrorMessage, s.opts.Bounds.ListErrorChars),
			Count: g.Count, FirstDeadAt: g.FirstDeadAt, LastDeadAt: g.LastDeadAt, Reasons: groupReasons(g.Reasons), SampleMsgIDs: g.SampleMsgIDs,
			RetriesFromDLQ: g.RetriesFromDLQ, ByField: v.breakdown(req.ByField, g.ByField)}
		out.Total += g.Count
	}
	out.Notes = v.listNotes(s.opts.Bounds.ListErrorChars)
	why := ""
	var left []DeadGroup
	if k := s.summaryFit(req, out); k > 0 {
		// Only the largest groups fit one response: the next page, and
		// the next steps, reach the others.
		out.Groups, left, out.Truncated, out.Total = out.Groups[:k], out.Groups[k:], true, 0
		for _, g := range out.Groups {
			out.Total += g.Count
		}
		why = fmt.Sprintf(", so that the response stays under %d characters", ResponseBudget)
	}
	if out.Truncated && len(out.Groups) > 0 {
		// The place after the last group listed, of the groups as the
		// store returned them, in the same order.
		if out.NextCursor, err = s.store.DeadGroupCursor(ctx, f, sum.Groups[len(out.Groups)-1]); err != nil {
			return DLQSummary{}, err
		}
	}
	largest := "the largest group"
	if req.Cursor != "" {
		largest = "the largest group of this page"
	}
	if len(out.Groups) > 0 {
		g := out.Groups[0]
		if len(g.SampleMsgIDs) > 0 {
			out.Next = append(out.Next, hint(OpDLQShow, "read why a message of "+largest+" died", "queue", g.DLQ, "msg_id", g.SampleMsgIDs[0]))
		}
		out.Next = append(out.Next, hint(OpDLQList, "list the messages of "+largest, "queue", g.DLQ, "group", g.Group))
	}
	if out.NextCursor != "" {
		// Every page with more after it says how to go on: the cursor
		// needs the same filters with it.
		out.Next = append(out.Next, hint(OpDLQSummary, "the next page", req.Filter.hintArgs("by_field", req.ByField, "cursor", out.NextCursor)...))
	}
	if out.Truncated || req.Cursor != "" {
		out.MessagesOmitted = max(sum.TotalMessages-out.Total, 0)
	}
	// The groups of the pages before this one, as the groups rank now.
	before := max(sum.TotalGroups-sum.AfterGroups, 0)
	all := plural.Count(out.Total+out.MessagesOmitted, "dead message", "dead messages")
	switch {
	case out.Truncated:
		others := max(sum.AfterGroups-len(out.Groups), 0)
		rest := plural.Count(others, "group", "groups") + " " + plural.Of(others, "holds", "hold") + " " + fmt.Sprint(max(sum.AfterMessages-out.Total, 0))
		note := fmt.Sprintf("only the %s of %d groups %s listed%s: the other %s of the %s", plural.Of(len(out.Groups), "largest", fmt.Sprintf("%d largest", len(out.Groups))), out.TotalGroups,
			plural.Of(len(out.Groups), "is", "are"), why, rest, all)
		if req.Cursor != "" {
			note = fmt.Sprintf("groups %d to %d of %d are listed, those ranked after the last of the page before%s: the %s ranked after them %s of the %s",
				before+1, before+len(out.Groups), out.TotalGroups, why, plural.Count(others, "group", "groups"), plural.Of(others, "holds", "hold")+" "+fmt.Sprint(max(sum.AfterMessages-out.Total, 0)), all)
		}
		ask(&out.Notes, &out.Asks, AskNextPage, note, 0)
		out.Next = append(out.Next, omittedHints(req.Filter, sum.Groups, left, others)...)
	case req.Cursor != "" && len(out.Groups) > 0:
		out.Notes = append(out.Notes, fmt.Sprintf("groups %d to %d of %d are listed, those ranked after the last of the page before: the last page", before+1, before+len(out.Groups), out.TotalGroups))
	case req.Cursor != "":
		out.Notes = append(out.Notes, "no group ranks after the last of the page before any more: groups changed since (messages retried, discarded or dead-lettered)")
		out.Next = append(out.Next, again)
	case gone:
		out.Notes = append(out.Notes, groupGoneText(f.Group))
		out.Next = append(out.Next, groupGoneHint(req.Filter))
	}
	return out, nil
}

// omittedHints are the next steps of a summary that left groups out (left,
// those the store returned; others, all of them): the summary of each DLQ
// holding some of them, the three holding the most, when the filter names
// no queue and the groups are in several DLQs (of one, it lists what this
// one did); and the filter's messages one by one, the groups' left out
// among them. Narrowing by what every group shares lists the same groups.
func omittedHints(f DeadFilter, all []store.DeadGroup, left []DeadGroup, others int) []Hint {
	var next []Hint
	dlqs := map[string]bool{}
	for _, g := range all {
		dlqs[g.DLQ] = true
	}
	if strings.TrimSpace(f.Queue) == "" && len(dlqs) > 1 {
		type leftIn struct {
			dlq              string
			groups, messages int64
		}
		var by []leftIn
		at := map[string]int{}
		for _, g := range left {
			i, ok := at[g.DLQ]
			if !ok {
				i, at[g.DLQ] = len(by), len(by)
				by = append(by, leftIn{dlq: g.DLQ})
			}
			by[i].groups++
			by[i].messages += g.Count
		}
		slices.SortStableFunc(by, func(a, b leftIn) int { return cmp.Compare(b.messages, a.messages) })
		for _, d := range by[:min(len(by), 3)] {
			one := f
			one.Queue = d.dlq
			next = append(next, hint(OpDLQSummary, fmt.Sprintf("summarize %s alone: %s of its groups, with %s, %s left out here", d.dlq,
				fmt.Sprint(d.groups), plural.Count(d.messages, "dead message", "dead messages"), plural.Of(d.groups, "was", "were")), one.hintArgs()...))
		}
	}
	next = append(next, hint(OpDLQList, fmt.Sprintf("list the dead messages these filters select one by one, newest first: those of the %s left out are among them",
		plural.Count(others, "group", "groups")), f.hintArgs()...))
	return next
}

// groupReasons are the reasons a group shows: ReasonNotRecorded for a
// group of messages without a block, which records none.
func groupReasons(rs []string) []string {
	if len(rs) == 0 {
		return []string{ReasonNotRecorded}
	}
	return rs
}

// DLQListRequest asks for one page of dead messages, newest first.
type DLQListRequest struct {
	Filter DeadFilter
	// MinPayloadBytes, when positive, lists only the messages whose
	// payload has at least that many bytes (DeadItem.PayloadBytes): where
	// a poison payload too large to handle hides among many.
	MinPayloadBytes int64
	// Order is one of ListOrders: OrderNewest ("" too) or OrderLargest.
	Order string
	// Cursor is the previous page's NextCursor, with the same filter,
	// minimum size and order; "" for the first page.
	Cursor string
	// Limit is the page size: 1 to MaxPageSize, 0 for DefaultPageSize.
	Limit int
}

// The orders of a list of dead messages (DLQListRequest.Order).
const (
	// OrderNewest lists the newest dead-lettered first: the default.
	OrderNewest = "newest"
	// OrderLargest lists the largest payload first, then the newest.
	OrderLargest = "largest"
)

// ListOrders are the orders DLQListRequest.Order takes.
var ListOrders = []string{OrderNewest, OrderLargest}

// pageArgs are the arguments of a list's hints beyond its filter: the
// minimum size and the order, the default order left out, then more.
func (r DLQListRequest) pageArgs(more ...any) []any {
	order := strings.TrimSpace(r.Order)
	if order == OrderNewest {
		order = ""
	}
	return r.Filter.hintArgs(append([]any{"min_payload_bytes", r.MinPayloadBytes, "order", order}, more...)...)
}

// DeadItem is one dead message in a list: its block's facts, without
// payload or backtrace.
type DeadItem struct {
	DLQ         string `json:"dlq" jsonschema_description:"Dead-letter queue holding the message."`
	MsgID       int64  `json:"msg_id" jsonschema_description:"Its id in the DLQ."`
	Kind        string `json:"kind,omitempty"`
	Reason      string `json:"reason" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded,enum=not_recorded" jsonschema_description:"Why the message died; not_recorded: reason not recorded, the message has no dead-letter block (a Ruby pgbus DLQ row from before the block, or one another client wrote)."`
	SourceQueue string `json:"source_queue" jsonschema_description:"Queue the message died in; empty when not recorded."`
	// SourceMsgID, Attempts and MaxRetries are nil when its block does
	// not hold them (another client wrote it, or none): unknown, never 0.
	SourceMsgID *int64 `json:"source_msg_id,omitempty" jsonschema_description:"Its id in the source queue; absent when not recorded."`
	Attempts    *int   `json:"attempts,omitempty" jsonschema_description:"Deliveries when it was routed; absent when not recorded."`
	MaxRetries  *int   `json:"max_retries,omitempty" jsonschema_description:"The max_retries in force when it was routed; absent when not recorded."`
	// UnrecordedCount counts the attempts of the trip it died on that
	// left no outcome, as DeadMessage.UnrecordedCount, from its block
	// alone; 0 also for a block of an older pgbus, which cannot tell.
	UnrecordedCount int `json:"unrecorded_count,omitempty" jsonschema_description:"Attempts that left no outcome (a lost claim, a crash), counted all the same."`
	// Unrecorded says in words what of its attempts left no outcome, to
	// show beside them as it is: the reads that ended without one, and
	// the read that dead-lettered it unrun, past max_retries or its
	// deadline, which attempts counts too.
	Unrecorded     string    `json:"unrecorded,omitempty" jsonschema_description:"What of attempts left no outcome, in words: reads that ended without one (a crash, a lost claim), and the read that dead-lettered the message unrun, past max_retries or its deadline, which attempts counts too."`
	ErrorClass     string    `json:"error_class,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty" jsonschema_description:"Last error message, secrets redacted, shortened."`
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	RetriesFromDLQ int       `json:"retries_from_dlq" jsonschema_description:"Trips out of a DLQ before this death."`
	PayloadBytes   int64     `json:"payload_bytes" jsonschema_description:"Size of the payload as JSON, in bytes."`
}

// DLQList is one page of dead messages.
type DLQList struct {
	Items      []DeadItem `json:"items" jsonschema_description:"Dead messages, newest first (order largest: largest payload_bytes first), without payload or backtrace."`
	NextCursor string     `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor, with the same filters, for the next page. Absent on the last page."`
	Notes      []string   `json:"notes" jsonschema_description:"What was shortened or hidden."`
	Next       []Hint     `json:"next" jsonschema_description:"What to do next: the next page, when there is one."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// DLQList returns one page of the dead messages the filter selects.
func (s *Service) DLQList(ctx context.Context, req DLQListRequest) (_ DLQList, err error) {
	ctx, end, err := s.enter(ctx, "DLQList", reads)
	if err != nil {
		return DLQList{}, err
	}
	defer end()
	defer againOnceFree(&err, OpDLQList, req.pageArgs("cursor", req.Cursor, "limit", req.Limit)...)
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return DLQList{}, err
	}
	limit, _ := pageLimit(OpDLQList, req.Limit)
	// The first page of this call's filters, all of them: with the queue
	// alone it would list other messages.
	again := hint(OpDLQList, "start again from the first page", req.pageArgs("limit", req.Limit)...)
	now, err := s.cursorClock(ctx, req.Cursor)
	if err != nil {
		return DLQList{}, explain(err, again)
	}
	f, err := req.Filter.resolve(now)
	if err != nil {
		return DLQList{}, err
	}
	if req.Filter.relative() {
		f.Clock = now
	}
	f.MinPayloadBytes = req.MinPayloadBytes
	order := store.DeadNewest
	if strings.TrimSpace(req.Order) == OrderLargest {
		order = store.DeadLargest
	}
	// A page over the response bound is read again with fewer rows, so
	// that its next_cursor follows the last row shown.
	asked := limit
	var out DLQList
	for {
		page, err := s.store.ListDeadOrdered(ctx, f, order, req.Cursor, limit)
		if err != nil {
			if errors.Is(err, ErrNotFound) || req.Cursor == "" {
				return DLQList{}, explain(err, queueHint(err, OpDLQList))
			}
			return DLQList{}, explain(err, again)
		}
		gone := false
		if len(page.Items) == 0 && req.Cursor == "" {
			if gone, err = s.groupScope(ctx, f); err != nil {
				return DLQList{}, err
			}
		}
		out = s.deadList(page)
		if gone {
			out.Notes = append(out.Notes, groupGoneText(f.Group))
			out.Next = append(out.Next, groupGoneHint(req.Filter))
		}
		k := shrunkPage(s.opts.Bounds, out.Items, DLQList{Notes: out.Notes, NextCursor: page.NextCursor})
		if k == 0 || k >= limit {
			break
		}
		limit = k
	}
	if limit < asked {
		shrunkNote(&out.Notes, &out.Asks, len(out.Items), asked, out.NextCursor != "")
	}
	if out.NextCursor != "" {
		// Every page with more after it says how to go on, whether or not
		// it was shortened: the cursor needs the same filters with it, and
		// the limit this page fitted in.
		out.Next = append(out.Next, hint(OpDLQList, "the next page", req.pageArgs("cursor", out.NextCursor, "limit", limit)...))
	}
	return out, nil
}

// deadList is the view of a page of dead messages.
func (s *Service) deadList(page store.DeadPage) DLQList {
	v := s.viewer(false)
	out := DLQList{Items: make([]DeadItem, len(page.Items)), NextCursor: page.NextCursor, Notes: []string{}, Next: []Hint{}}
	for i, it := range page.Items {
		out.Items[i] = DeadItem{DLQ: it.DLQ, MsgID: it.MsgID, Kind: shownKind(it.Kind), Reason: shownReason(it.Reason), SourceQueue: it.SourceQueue,
			SourceMsgID: known(it.SourceMsgID, it.Missing.SourceMsgID), Attempts: known(it.Attempts, it.Missing.Attempts),
			MaxRetries: known(it.MaxRetries, it.Missing.MaxRetries), ErrorClass: v.class(it.ErrorClass),
			ErrorMessage: v.errorText(it.ErrorMessage, s.opts.Bounds.ListErrorChars), DeadLetteredAt: it.DeadLetteredAt,
			RetriesFromDLQ: it.RetriesFromDLQ, PayloadBytes: it.PayloadBytes}
		count, routed := unrecordedCount(it)
		out.Items[i].UnrecordedCount, out.Items[i].Unrecorded = count, unrecordedLabel(count, routed, it.Reason)
	}
	out.Notes = append(out.Notes, v.listNotes(s.opts.Bounds.ListErrorChars)...)
	return out
}

// cursorClock returns the time the ages of a page's filter count back
// from: for a page after a cursor, the instant its first page pinned,
// which the cursor carries signed, so that an age means the same window
// on every page; otherwise now. A cursor not issued here, or changed, is
// refused.
func (s *Service) cursorClock(ctx context.Context, cursor string) (time.Time, error) {
	return s.pageClock(ctx, cursor, s.store.DeadCursorClock)
}

// pageClock is cursorClock for a cursor that read reads: a list's, a
// summary's.
func (s *Service) pageClock(ctx context.Context, cursor string, read func(context.Context, string) (time.Time, error)) (time.Time, error) {
	if cursor == "" {
		return s.now(), nil
	}
	clock, err := read(ctx, cursor)
	if err != nil || clock.IsZero() {
		return s.now(), err
	}
	return clock, nil
}

// DLQShowRequest asks for one dead message in full.
type DLQShowRequest struct {
	// Queue is the message's DLQ or its queue; "" when only one DLQ holds
	// MsgID.
	Queue string
	MsgID int64
	// IncludePayload asks for the payload, shown when the service allows
	// payloads.
	IncludePayload bool
	// FullHistory lists every failure as recorded, identical ones in a row
	// not folded, as many as fit the response bound.
	FullHistory bool
}

// DeadMessage is one dead message as every front end shows it: the block,
// headers and history redacted and bounded, the payload only when allowed
// and asked for.
type DeadMessage struct {
	DLQ                string            `json:"dlq" jsonschema_description:"The DLQ holding the message."`
	Queue              string            `json:"queue" jsonschema_description:"The queue the DLQ belongs to."`
	MsgID              int64             `json:"msg_id"`
	Kind               string            `json:"kind,omitempty"`
	ReadCount          int               `json:"read_ct" jsonschema_description:"Reads of the DLQ row (by PGMQ clients); not the attempts, which are in dead_letter."`
	DeadLetteredAt     time.Time         `json:"dead_lettered_at"`
	DeadLetter         *DeadLetter       `json:"dead_letter,omitempty" jsonschema_description:"Why and when the message died: reason, source queue and id, attempts, and the last error with its backtrace. Absent for a message put in the DLQ by another client."`
	Headers            json.RawMessage   `json:"headers,omitempty" jsonschema_description:"The message's headers without the dead-letter block, secrets redacted."`
	HeadersLeftOut     int               `json:"headers_left_out,omitempty" jsonschema_description:"Headers not shown, as they did not fit; notes says how many there are."`
	Deadline           *time.Time        `json:"deadline,omitempty" jsonschema_description:"Its deadline (pgbus_deadline header), when it has one."`
	DeadlinePassed     bool              `json:"deadline_passed,omitempty" jsonschema_description:"Its deadline has passed: a retry leaves it in the DLQ (a worker would dead-letter it again without running it) unless clear_deadline is set."`
	SafeFields         map[string]string `json:"safe_fields,omitempty" jsonschema_description:"Values of the payload fields the operator named safe, shown even when the payload is hidden, secrets redacted; fields the payload lacks are left out."`
	PayloadBytes       int               `json:"payload_bytes" jsonschema_description:"Size of the stored payload as JSON."`
	PayloadShown       bool              `json:"payload_shown" jsonschema_description:"Whether payload (or, when truncated, payload_preview) holds the payload."`
	Payload            json.RawMessage   `json:"payload,omitempty" jsonschema_description:"The payload with secrets redacted; present only when payload_shown and not truncated."`
	PayloadPreview     string            `json:"payload_preview,omitempty" jsonschema_description:"A payload too large to return whole, as JSON text: when payload_preview_json, the whole payload with the values that did not fit shortened, each marked in place with \"…[shortened: \" and what it was; otherwise only its start."`
	PayloadPreviewJSON bool              `json:"payload_preview_json,omitempty" jsonschema_description:"payload_preview is valid JSON: the payload with every top-level key, its long strings, arrays and nested objects shortened, each cut marked. Not a payload to retry with: the marks would replace the values."`
	PayloadTruncated   bool              `json:"payload_truncated,omitempty"`
	RedactedValues     int               `json:"redacted_values,omitempty" jsonschema_description:"Values replaced by [REDACTED] in payload, headers and error text."`
	// PayloadRedacted is the payload's share of RedactedValues, for a
	// front end that states it beside the payload.
	PayloadRedacted int       `json:"-"`
	History         []Failure `json:"history" jsonschema_description:"Recorded failures, oldest first (the newest only, when there are many), error text redacted and shortened."`
	HistoryOmitted  int       `json:"history_omitted,omitempty" jsonschema_description:"Older failures left out."`
	FailureCount    int       `json:"failure_count" jsonschema_description:"Failures recorded in all."`
	// UnrecordedAttempts are the attempts of the trip the message died on
	// (since it was sent, or last retried out of a DLQ) that recorded no
	// outcome: their read took the message, and so counted, but no result
	// of its job was written. It lists the first 100; UnrecordedCount
	// counts them all, and Unrecorded says what they mean in words.
	UnrecordedAttempts []int    `json:"unrecorded_attempts,omitempty" jsonschema_description:"Attempts that left no outcome (a lost claim, a crash), counted all the same; the first 100."`
	UnrecordedCount    int      `json:"unrecorded_count,omitempty"`
	Unrecorded         string   `json:"unrecorded,omitempty" jsonschema_description:"unrecorded_attempts in words."`
	Notes              []string `json:"notes" jsonschema_description:"What was hidden or shortened."`
	Next               []Hint   `json:"next" jsonschema_description:"What to do next."`
	// Asks say how to see what notes say was hidden, for each front end
	// to word (WordAsks).
	Asks []Ask `json:"-"`
}

// DLQShow returns one dead message: its block, headers, failure history
// and, when allowed and asked for, its payload.
func (s *Service) DLQShow(ctx context.Context, req DLQShowRequest) (_ DeadMessage, err error) {
	ctx, end, err := s.enter(ctx, "DLQShow", reads)
	if err != nil {
		return DeadMessage{}, err
	}
	defer end()
	defer againOnceFree(&err, OpDLQShow, "queue", req.Queue, "msg_id", req.MsgID, "include_payload", req.IncludePayload, "full_history", req.FullHistory)
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return DeadMessage{}, err
	}
	dlq, err := s.locateOne(ctx, req.Queue, req.MsgID, func(q string) Hint {
		return hint(OpDLQShow, onLevelWhy(q), "queue", q, "msg_id", req.MsgID)
	})
	if err != nil {
		return DeadMessage{}, err
	}
	// The payload is read only when shown, and then only once the view
	// holds its share of the gate, so that views waiting for theirs hold
	// no copy of theirs; the safe fields' values are read where it is.
	shown := s.viewer(req.IncludePayload).showPay
	m, err := s.store.ShowDeadRead(ctx, dlq, req.MsgID, store.DeadRead{Fields: s.opts.SafeFields, FieldChars: fieldReadChars})
	if err != nil {
		return DeadMessage{}, explain(err, hint(OpDLQList, "lists what is still dead", "queue", baseQueue(dlq)))
	}
	size := 0
	if shown {
		size = m.PayloadBytes
	}
	release, err := s.viewShare(ctx, size, fmt.Sprintf("the view of message %d of %s", m.MsgID, m.DLQ), shown,
		hint(OpDLQShow, "show it again once the other views of large payloads are done", "queue", m.DLQ, "msg_id", m.MsgID))
	if err != nil {
		return DeadMessage{}, err
	}
	defer release()
	if shown {
		if m.Payload, err = s.store.DeadPayload(ctx, m.DLQ, m.MsgID); err != nil {
			return DeadMessage{}, explain(err, hint(OpDLQList, "lists what is still dead", "queue", baseQueue(m.DLQ)))
		}
		s.views.read.Add(int64(len(m.Payload)))
	}
	return s.deadView(m, req.IncludePayload, req.FullHistory, s.droppedStats(ctx, baseQueue(m.DLQ))), nil
}

// deadView is the view of a dead message, cut step by step until it fits
// the response bound. dropped is its queue's stats when the queue was
// dropped, its DLQ left behind, and nil otherwise.
func (s *Service) deadView(m store.DeadMessage, askedPayload, full bool, dropped *store.QueueStats) DeadMessage {
	b := s.opts.Bounds
	if full {
		b.History = max(b.History, len(m.History))
	}
	// Each step views the same payload, redacted and searched once.
	pay := &payloadOnce{}
	out := s.deadViewWith(m, askedPayload, full, b, pay, dropped)
	cut := false
	for step := 0; b.over(out); step++ {
		tb, ok := b.tighter(step)
		if !ok {
			break
		}
		b, cut = tb, true
		out = s.deadViewWith(m, askedPayload, full, b, pay, dropped)
	}
	if cut {
		askOp(&out.Notes, &out.Asks, AskWhole, OpDLQShow, budgetNote)
	}
	return out
}

// payloadOnce is what the views of one payload share: it redacted, and
// the values of its safe fields.
type payloadOnce struct {
	red    redactedPayload
	fields *fieldValues
}

func (s *Service) deadViewWith(m store.DeadMessage, askedPayload, full bool, b Bounds, pay *payloadOnce, dropped *store.QueueStats) DeadMessage {
	v := s.viewerWith(askedPayload, b)
	out := DeadMessage{
		DLQ: m.DLQ, Queue: baseQueue(m.DLQ), MsgID: m.MsgID, Kind: shownKind(m.Kind), ReadCount: m.ReadCount,
		DeadLetteredAt: m.DeadLetteredAt, PayloadBytes: m.PayloadBytes, Notes: []string{},
	}
	note := func(n string) {
		if n != "" {
			out.Notes = append(out.Notes, n)
		}
	}
	out.DeadLetter = v.block(m.Block)
	if m.Block == nil {
		note(NotRecordedNote)
	}
	if pay.fields == nil {
		pay.fields = readFields(m.Fields)
	}
	out.SafeFields = v.shownFields(pay.fields)
	var n string
	out.Headers, n, out.HeadersLeftOut = v.headers(m.Headers)
	note(n)
	pv := v.payloadOnce(m.Payload, b.Payload, &pay.red)
	out.PayloadShown, out.Payload, out.PayloadPreview, out.PayloadTruncated, out.PayloadRedacted = pv.shown, pv.payload, pv.preview, pv.truncated, pv.redacted
	out.PayloadPreviewJSON = pv.previewJSON
	if pv.askable {
		ask(&out.Notes, &out.Asks, AskPayload, pv.note, 0)
	} else {
		note(pv.note)
	}
	var tripStart time.Time
	if m.Block != nil {
		tripStart = m.Block.SourceEnqueuedAt
	}
	out.History, out.HistoryOmitted = v.history(m.History, b.History, b.BacktraceLines, full, tripStart)
	out.FailureCount = len(m.History)
	out.UnrecordedAttempts, out.UnrecordedCount, out.Unrecorded = unrecorded(m.Block, m.History)
	if out.HistoryOmitted > 0 {
		note("history: the " + plural.Of(out.HistoryOmitted, "oldest failure is", fmt.Sprintf("%d oldest failures are", out.HistoryOmitted)) + " left out")
	}
	if !full && len(out.History) < len(m.History)-out.HistoryOmitted {
		ask(&out.Notes, &out.Asks, AskFullHistory, "history: identical failures in a row are one entry with repeated", 0)
	}
	if v.cut {
		note(fmt.Sprintf("error messages over %d characters and backtraces over %d lines or %d characters are shortened", b.ErrorChars, b.BacktraceLines, b.BacktraceChars))
	}
	out.RedactedValues = v.redacted
	if v.redacted > 0 {
		note(fmt.Sprintf("%s (passwords, tokens, keys, credentials in text) %s shown as %s", plural.Count(v.redacted, "secret-looking value", "secret-looking values"), plural.Of(v.redacted, "is", "are"), Redacted))
	}
	out.Deadline, out.DeadlinePassed = deadlineOf(m.Headers, s.now())
	ids := []int64{m.MsgID}
	retry := hint(OpDLQRetry, "once the cause is fixed, put it back on its queue (with a corrected payload if the data was wrong)", "queue", m.DLQ, "ids", ids)
	if out.DeadlinePassed {
		retry = hint(OpDLQRetry, "once the cause is fixed, put it back on its queue without its deadline, which has passed, so that it runs however late", "queue", m.DLQ, "ids", ids, "clear_deadline", true)
	}
	if b := out.DeadLetter; b != nil && b.RetriesFromDLQ > 0 {
		// It came back: the last retry did not fix the cause.
		retry.Why = fmt.Sprintf("it died again after %s, so first find what %s left unfixed; then %s",
			plural.Count(b.RetriesFromDLQ, "retry out of a DLQ", "retries out of a DLQ"), plural.Of(b.RetriesFromDLQ, "that retry", "those retries"),
			strings.TrimPrefix(retry.Why, "once the cause is fixed, "))
	}
	out.Next = []Hint{retry, hint(OpDLQDiscard, "if it must never run", "queue", m.DLQ, "ids", ids)}
	if dropped != nil {
		// A retry would fail: it has no queue to go back to until the
		// queue is made again, as it was.
		note(fmt.Sprintf("queue %q was dropped, so a retry cannot put this message back until the queue is created again", dropped.Queue))
		retry.Why += ", once the queue is created again"
		out.Next = []Hint{recreateHint(*dropped), retry, out.Next[1]}
	}
	return out
}

// deadlineOf reads the deadline of a message's headers, and whether it
// is before now; nil when it has none.
func deadlineOf(headers json.RawMessage, now time.Time) (*time.Time, bool) {
	var h map[string]json.RawMessage
	var s string
	if json.Unmarshal(headers, &h) != nil || json.Unmarshal(h[store.HeaderDeadline], &s) != nil {
		return nil, false
	}
	at, ok := store.ParseDeadline(s)
	if !ok {
		return nil, false
	}
	return &at, at.Before(now)
}

// queueHint is the next step of a read of dead messages refused for its
// queue: the same read of the queue whose level it named (orders for
// orders_p1), or the list of queues.
func queueHint(err error, op string) Hint {
	if lvl := (*store.LevelError)(nil); errors.As(err, &lvl) {
		return hint(op, "the dead messages of every level of queue "+lvl.Queue, "queue", lvl.Queue)
	}
	return hint(OpQueueStats, "lists the queues there are")
}
