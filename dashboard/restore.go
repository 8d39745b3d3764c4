package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/ops"
)

// discardedData is the page of a queue's discarded messages: its filter,
// as the page's form shows it, and the archive's messages it selects.
type discardedData struct {
	Filter ops.DeadFilter
	// Limit is the ?limit= asked for, "" for the default.
	Limit string
	// Cursor is the ?cursor= of a page after the first.
	Cursor string
	List   ops.DLQDiscarded
}

// Restorable counts the messages listed that a restore brings back.
func (d discardedData) Restorable() int {
	n := 0
	for _, it := range d.List.Items {
		if it.Restorable {
			n++
		}
	}
	return n
}

// NextPage is the link to the page after this one, "" on the last page.
func (d discardedData) NextPage() string {
	if d.List.NextCursor == "" {
		return ""
	}
	return d.page(d.List.NextCursor)
}

// FirstPage is the link to the first page of the same filters.
func (d discardedData) FirstPage() string { return d.page("") }

func (d discardedData) page(cursor string) string {
	f := d.Filter
	return pageLink("/dlq/discarded", "queue", f.Queue, "kind", f.Kind, "error_class", f.ErrorClass, "since", f.Since, "until", f.Until,
		"limit", d.Limit, "cursor", cursor)
}

// Filtered reports whether the page selects less than every discarded
// message of its queue.
func (d discardedData) Filtered() bool {
	f := d.Filter
	return f.Kind != "" || f.ErrorClass != "" || f.Since != "" || f.Until != "" || d.Limit != ""
}

// discardedPath is the page of the messages discarded from queue's DLQ,
// of the kind and error class given (empty: every one).
func discardedPath(queue, kind, errorClass string) string {
	return pageLink("/dlq/discarded", "queue", queue, "kind", kind, "error_class", errorClass)
}

// undoLinks are the next steps among hints that undo a discard, the list
// of the messages it discarded from a queue, worded as the way back.
func undoLinks(hints []ops.Hint) []link {
	var out []link
	for _, h := range hints {
		if h.Op != ops.OpDLQDiscarded {
			continue
		}
		arg := func(k string) string { s, _ := h.Args[k].(string); return s }
		out = append(out, link{discardedPath(arg("queue"), arg("kind"), arg("error_class")),
			"Undo: see the discarded messages of " + arg("queue") + ", to restore them"})
	}
	return out
}

// discardedLimit reads ?limit=: 0 for the default, or why it is refused.
func discardedLimit(s string) (int, string) {
	if s == "" {
		return 0, ""
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > ops.MaxPageSize {
		return 0, fmt.Sprintf("The limit %s is not one this page takes: give how many discarded messages to list, 1 to %d (default %d).", strconv.Quote(s), ops.MaxPageSize, ops.DefaultPageSize)
	}
	return n, ""
}

// discardedList lists the messages discarded from a queue's DLQ, with
// the restorable ones offered for a restore.
func (s *server) discardedList(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	f := deadFilter(q)
	d := discardedData{Filter: ops.DeadFilter{Queue: f.Queue, Kind: f.Kind, ErrorClass: f.ErrorClass, Since: f.Since, Until: f.Until}, Limit: strings.TrimSpace(q.Get("limit")),
		Cursor: q.Get("cursor")}
	v.Title, v.Nav = "Discarded messages", "dlq"
	limit, why := discardedLimit(d.Limit)
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, why)
		return
	}
	list, err := s.svc.DLQDiscarded(r.Context(), ops.DLQDiscardedRequest{Filter: d.Filter, Limit: limit, Cursor: d.Cursor})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d.List = list
	v.Title = "Discarded messages of " + d.Filter.Queue
	s.render(w, r, http.StatusOK, "discarded", v, d)
}

// restoreData is the preview of a restore of discarded messages.
type restoreData struct {
	Queue string
	DLQ   string
	// IDs are those asked for; Restorable those of them a restore brings
	// back, which the confirmation sends.
	IDs, Restorable []int64
	// Count is how many would come back.
	Count           int
	Outcomes        []ops.IDOutcome
	OutcomesOmitted int
}

// restoreIDs reads the queue and ids of a restore, from a query or a
// form; why, when they name none, says what is wrong.
func restoreIDs(v url.Values) (queue string, ids []int64, why string) {
	queue = strings.TrimSpace(v.Get("queue"))
	for _, s := range v["id"] {
		id, err := ops.ParseID(s)
		if err != nil {
			msg, _ := ops.RedactText(err.Error())
			return queue, nil, "Which messages? The " + msg + ". Tick the messages to restore on the page of a queue's discarded messages."
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return queue, nil, "Nothing is selected: tick the messages to restore on the page of a queue's discarded messages, then choose “Restore selected”."
	}
	return queue, ids, ""
}

// restorePreview is the dry run of a restore: what would come back into
// the DLQ, and a form that restores it.
func (s *server) restorePreview(w http.ResponseWriter, r *http.Request, v *view) {
	v.Title, v.Nav = "Restore discarded messages", "dlq"
	if !v.CanWrite {
		s.refuse(w, r, v, http.StatusForbidden, "This server is read-only: restores are off. The page of discarded messages still lists them.")
		return
	}
	queue, ids, why := restoreIDs(r.URL.Query())
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, why)
		return
	}
	res, err := s.svc.DLQRestore(r.Context(), ops.DLQRestoreRequest{Queue: queue, IDs: ids, DryRun: true})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	if res.Restored == 0 {
		s.nothingRestored(w, r, v, queue, res, "Nothing to restore")
		return
	}
	d := restoreData{Queue: queue, DLQ: res.DLQ, IDs: ids, Count: res.Restored, Outcomes: res.Outcomes, OutcomesOmitted: res.OutcomesOmitted}
	for _, o := range res.Outcomes {
		if o.Outcome == ops.OutcomeWouldRestore {
			d.Restorable = append(d.Restorable, o.ID)
		}
	}
	if res.OutcomesOmitted > 0 {
		// The outcomes left some out: the confirmation sends every id, and
		// the restore says what became of each.
		d.Restorable = ids
	}
	s.render(w, r, http.StatusOK, "restore", v, d)
}

// restoreRun restores the messages a preview listed, then says what came
// back.
func (s *server) restoreRun(w http.ResponseWriter, r *http.Request, v *view) {
	v.Title, v.Nav = "Restore discarded messages", "dlq"
	queue, ids, why := restoreIDs(r.PostForm)
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, why)
		return
	}
	res, err := s.svc.DLQRestore(r.Context(), ops.DLQRestoreRequest{Queue: queue, IDs: ids})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	if res.Restored == 0 {
		s.nothingRestored(w, r, v, queue, res, "Nothing was restored")
		return
	}
	var back []string
	for _, o := range res.Outcomes {
		if o.Outcome == ops.OutcomeRestored {
			back = append(back, strconv.FormatInt(o.ID, 10))
		}
	}
	d := done{Heading: "Restored " + plural.Count(res.Restored, "message", "messages"), Problem: res.FirstError,
		Lines: []string{plural.Of(len(back), "Message ", "Messages ") + strings.Join(back, ", ") + plural.Of(len(back), " is", " are") + " back in " + res.DLQ + ", dead again with " +
			plural.Of(len(back), "its id, payload, headers and failure history: retry or discard it", "their ids, payloads, headers and failure history: retry or discard them") + " from the list of dead messages."},
		Links: []link{{pageLink("/dlq/messages", "queue", res.DLQ), "Back to the dead messages of " + res.DLQ},
			{discardedPath(queue, "", ""), "The discarded messages of " + queue},
			{pageLink("/audit", "client", Client), "The dashboard's audit entries"}}}
	if res.OutcomesOmitted > 0 {
		d.Lines = append(d.Lines, fmt.Sprintf("The outcomes of %s more are not listed here; the counts include them.", plural.Count(res.OutcomesOmitted, "id", "ids")))
	}
	v.Title = d.Heading
	s.render(w, r, http.StatusOK, "done", v, d)
}

// nothingRestored is the problem page of a restore, or its preview, that
// would bring back none of the ids: none is in the archive, or each is
// the original of a corrected retry.
func (s *server) nothingRestored(w http.ResponseWriter, r *http.Request, v *view, queue string, res ops.DLQRestore, what string) {
	status := http.StatusNotFound
	if res.NotFound == 0 {
		status = http.StatusConflict
	}
	msg := what + ": " + res.FirstError
	if n := res.NotFound + res.Refused; n > 1 {
		msg += fmt.Sprintf(" (and %d more of the ids given cannot be restored)", n-1)
	}
	msg += ". Nothing was changed."
	links := []link{{discardedPath(queue, "", ""), "The discarded messages of " + queue}, {pageLink("/dlq", "queue", queue), "The dead letters of " + queue}}
	s.refuseLinks(w, r, v, status, msg, links)
}
