package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// What a summary groups dead messages by (DLQSummaryRequest.By).
const (
	// SummaryByGroup groups them by DLQ, source queue, kind, error class
	// and error pattern: the default.
	SummaryByGroup = "group"
	// SummaryByErrorClass rolls them up by error class across every DLQ
	// the filter selects, each class with the DLQs it touches.
	SummaryByErrorClass = "error_class"
)

// SummaryBys are the values DLQSummaryRequest.By takes.
var SummaryBys = []string{SummaryByGroup, SummaryByErrorClass}

// classQueuesShown bounds the DLQs a class of a summary by error class
// names, the most touched first.
const classQueuesShown = 10

// DeadClass counts the dead messages of one error class across the DLQs
// a summary by error class reads.
type DeadClass struct {
	ErrorClass string `json:"error_class" jsonschema_description:"Empty when no failure was recorded (the worker crashed)."`
	Count      int64  `json:"count"`
	// Reasons count the class's messages by why they died.
	Reasons []ReasonCount `json:"reasons" jsonschema_description:"Its messages by reason, most first; not_recorded: no dead-letter block."`
	// Queues are the DLQs holding the class's messages, the most first,
	// at most classQueuesShown; QueuesOmitted counts the others.
	Queues        []DLQCount `json:"queues" jsonschema_description:"The DLQs holding them, most first; at most 10."`
	QueuesOmitted int        `json:"queues_omitted,omitempty" jsonschema_description:"DLQs holding them left out of queues."`
}

// ReasonCount counts the dead messages of a reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// DLQCount counts the dead messages of a DLQ.
type DLQCount struct {
	DLQ   string `json:"dlq"`
	Count int64  `json:"count"`
}

// checkBy checks the By of a summary request and the fields it excludes.
func (r DLQSummaryRequest) checkBy() error {
	by := strings.TrimSpace(r.By)
	if err := checkText("by", r.By); err != nil {
		return err
	}
	switch {
	case by == "" || by == SummaryByGroup:
		return nil
	case by != SummaryByErrorClass:
		return fieldf("by", "%q is nothing a summary groups by; give %s (the default: source queue, kind, error class and error pattern) or %s (every class across the DLQs)", clip(by, 60), SummaryByGroup, SummaryByErrorClass)
	case r.Cursor != "":
		return fieldf("cursor", "a summary by error class lists its classes on one page, and has no cursor; leave cursor out").naming("by")
	case r.ByField != "":
		return fieldf("by_field", "breaks groups down, and a summary by error class lists no groups; leave by_field out, or leave by out for the groups").naming("by")
	}
	return nil
}

// byClass reports whether the request asks for a summary by error class.
func (r DLQSummaryRequest) byClass() bool { return strings.TrimSpace(r.By) == SummaryByErrorClass }

// summaryByClass is DLQSummary by error class: every dead message f (of
// req's filter) selects, counted by error class across the DLQs.
func (s *Service) summaryByClass(ctx context.Context, req DLQSummaryRequest, f store.DeadFilter) (DLQSummary, error) {
	rows, err := s.store.CountDeadByClass(ctx, f)
	if err != nil {
		return DLQSummary{}, explain(err, queueHint(err, OpDLQSummary))
	}
	v := s.viewer(false)
	at := map[string]int{}
	var classes []DeadClass
	for _, r := range rows {
		i, ok := at[r.ErrorClass]
		if !ok {
			i, at[r.ErrorClass] = len(classes), len(classes)
			classes = append(classes, DeadClass{ErrorClass: r.ErrorClass})
		}
		c := &classes[i]
		c.Count += r.Count
		c.Queues = addCount(c.Queues, DLQCount{DLQ: r.DLQ}, r.Count, func(d DLQCount) string { return d.DLQ }, func(d *DLQCount) *int64 { return &d.Count })
		c.Reasons = addCount(c.Reasons, ReasonCount{Reason: shownReason(r.Reason)}, r.Count, func(x ReasonCount) string { return x.Reason }, func(x *ReasonCount) *int64 { return &x.Count })
	}
	out := DLQSummary{Groups: []DeadGroup{}, Classes: make([]DeadClass, 0, len(classes)), TotalClasses: len(classes), Notes: []string{}, Next: []Hint{}}
	slices.SortFunc(classes, func(a, b DeadClass) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.ErrorClass, b.ErrorClass))
	})
	for _, c := range classes {
		// Largest first, ties by name: the same answer every time.
		slices.SortFunc(c.Queues, func(a, b DLQCount) int { return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.DLQ, b.DLQ)) })
		slices.SortFunc(c.Reasons, func(a, b ReasonCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Reason, b.Reason))
		})
		if len(c.Queues) > classQueuesShown {
			c.Queues, c.QueuesOmitted = c.Queues[:classQueuesShown], len(c.Queues)-classQueuesShown
		}
		c.ErrorClass = v.class(c.ErrorClass)
		out.Classes = append(out.Classes, c)
		out.Total += c.Count
	}
	if !req.All {
		room := DLQSummary{Notes: []string{}, Next: []Hint{{Why: strings.Repeat("x", 400+summaryOmittedRoom(req.Filter))}}}
		if k := shrunkPage(s.opts.Bounds, out.Classes, room); k > 0 {
			for _, c := range out.Classes[k:] {
				out.MessagesOmitted += c.Count
			}
			out.Classes, out.Truncated, out.Total = out.Classes[:k], true, out.Total-out.MessagesOmitted
			left := len(classes) - k
			out.Notes = append(out.Notes, fmt.Sprintf("only the %d largest of %d error classes are listed, so that the response stays under %d characters: the other %s %s %d dead messages; narrow the filters (a queue, a shorter time, a kind or a reason) to see them",
				k, len(classes), ResponseBudget, plural.Count(left, "class", "classes"), plural.Of(left, "holds", "hold"), out.MessagesOmitted))
		}
	}
	if len(out.Classes) > 0 {
		c := out.Classes[0]
		if c.ErrorClass != "" && !strings.Contains(c.ErrorClass, Redacted) {
			one := req.Filter
			one.ErrorClass = c.ErrorClass
			out.Next = append(out.Next, hint(OpDLQSummary, "the groups of the largest error class, by queue, kind and error pattern", one.hintArgs()...))
			if len(c.Queues) > 0 {
				out.Next = append(out.Next, hint(OpDLQList, "list the messages of the largest error class", one.hintArgs()...))
			}
		}
	} else if f.Group != "" {
		gone, err := s.groupScope(ctx, f)
		if err != nil {
			return DLQSummary{}, err
		}
		if gone {
			out.Notes = append(out.Notes, groupGoneText(f.Group))
			out.Next = append(out.Next, groupGoneHint(req.Filter))
		}
	}
	return out, nil
}

// addCount adds n to the count of the item of list whose key is that of
// item, appending item for a key not there yet.
func addCount[T any](list []T, item T, n int64, key func(T) string, count func(*T) *int64) []T {
	k := key(item)
	for i := range list {
		if key(list[i]) == k {
			*count(&list[i]) += n
			return list
		}
	}
	*count(&item) = n
	return append(list, item)
}

// byArg is By as a hint repeats it: "" for the default.
func (r DLQSummaryRequest) byArg() string {
	if r.byClass() {
		return SummaryByErrorClass
	}
	return ""
}
