package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/ops"
)

func errChanged(err error) bool { return errors.Is(err, ops.ErrChanged) }

// done is the page after an action: what it did, in words, and where to
// go next.
type done struct {
	Heading string
	Lines   []string
	Problem string
	// Kept is text the person typed for an action that did not happen,
	// shown again so that it is not lost.
	Kept  string
	Links []link
}

// formID reads the queue and message id of a one-message action; why,
// when the form names no message, says what is wrong with its id.
func formID(r *http.Request) (queue string, id int64, why string) {
	s := r.PostFormValue("id")
	id, err := ops.ParseID(s)
	switch {
	case s == "":
		why = "The form lacks its id"
	case err != nil:
		why = "The form's id " + strconv.Quote(s) + " is not a message id (" + ops.IDForm + ")"
	}
	return strings.TrimSpace(r.PostFormValue("queue")), id, why
}

// retryOne retries one dead message, confirmed on its page.
func (s *server) retryOne(w http.ResponseWriter, r *http.Request, v *view) {
	dlq, id, why := formID(r)
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, "Which message? "+why+": retry it from its page.")
		return
	}
	res, err := s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: dlq},
		ClearDeadline: r.PostFormValue("clear_deadline") == "1"})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d := done{Heading: "Message " + strconv.FormatInt(id, 10) + " retried", Links: []link{{pageLink("/dlq", "queue", dlq), "Back to the dead letters of " + dlq}, {pageLink("/audit", "client", Client), "The dashboard's audit entries"}}}
	if !res.OK() || res.Retried == 0 {
		d.Heading, d.Problem = "Message "+strconv.FormatInt(id, 10)+" was not retried", res.FirstError
	}
	for _, m := range res.Moved {
		d.Lines = append(d.Lines, "Moved back to "+m.Queue+" as message "+strconv.FormatInt(m.MsgID, 10)+".")
	}
	d.Lines = append(d.Lines, workerLines(res.Workers)...)
	v.Title, v.Nav = d.Heading, "dlq"
	s.render(w, r, http.StatusOK, "done", v, d)
}

// discardOne discards one dead message to its DLQ's archive.
func (s *server) discardOne(w http.ResponseWriter, r *http.Request, v *view) {
	dlq, id, why := formID(r)
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, "Which message? "+why+": discard it from its page.")
		return
	}
	res, err := s.svc.DLQDiscard(r.Context(), ops.DLQDiscardRequest{IDs: []int64{id}, Filter: ops.DeadFilter{Queue: dlq}})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d := done{Heading: "Message " + strconv.FormatInt(id, 10) + " discarded", Lines: []string{"It is in the archive of " + dlq + " until the retention purges it."},
		Links: append(undoLinks(res.Next), link{pageLink("/dlq", "queue", dlq), "Back to the dead letters of " + dlq},
			link{pageLink("/audit", "client", Client), "The dashboard's audit entries"})}
	if !res.OK() || res.Discarded == 0 {
		d.Heading, d.Lines, d.Problem = "Message "+strconv.FormatInt(id, 10)+" was not discarded", nil, res.FirstError
	}
	v.Title, v.Nav = d.Heading, "dlq"
	s.render(w, r, http.StatusOK, "done", v, d)
}

func workerLines(ws []ops.QueueWorkers) []string {
	var out []string
	for _, q := range ws {
		if !q.Served() {
			out = append(out, q.Queue+": "+q.Note)
		}
	}
	return out
}

func (s *server) pause(w http.ResponseWriter, r *http.Request, v *view) {
	s.setPaused(w, r, v, true)
}

func (s *server) resume(w http.ResponseWriter, r *http.Request, v *view) {
	s.setPaused(w, r, v, false)
}

func (s *server) setPaused(w http.ResponseWriter, r *http.Request, v *view, pause bool) {
	req := ops.QueueRequest{Queue: strings.TrimSpace(r.PostFormValue("queue"))}
	op, verb := s.svc.QueueResume, "resumed"
	if pause {
		op, verb = s.svc.QueuePause, "paused"
	}
	res, err := op(r.Context(), req)
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d := done{Heading: "Queue " + res.Queue + " " + verb, Links: []link{{queuePath(res.Queue), "The page of queue " + res.Queue}, {"/", "Back to the overview"}}}
	if !res.Changed {
		d.Heading = "Queue " + res.Queue + " was already " + verb
	}
	if pause {
		d.Lines = append(d.Lines, "Workers take none of its messages until it is resumed; messages already running finish.")
	} else if res.Workers != nil && !res.Workers.Served() {
		d.Lines = append(d.Lines, res.Workers.Note)
	}
	v.Title, v.Nav = d.Heading, "overview"
	s.render(w, r, http.StatusOK, "done", v, d)
}

// runNow makes a queue's retrying messages visible now, from the button
// of its page.
func (s *server) runNow(w http.ResponseWriter, r *http.Request, v *view) {
	res, err := s.svc.QueueRunNow(r.Context(), ops.QueueRunNowRequest{Queue: strings.TrimSpace(r.PostFormValue("queue"))})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d := done{Heading: fmt.Sprintf("%s of queue %s run now", plural.Count(res.Visible, "retrying message", "retrying messages"), res.Queue),
		Lines: []string{"They no longer wait out their retry backoff: workers take them now, their attempts so far still counted."},
		Links: []link{{queuePath(res.Queue), "The page of queue " + res.Queue}, {"/", "Back to the overview"}}}
	if res.Visible == 0 {
		d.Lines = []string{"None was waiting out its backoff any more: workers may have taken them already, or they failed for good."}
	}
	if res.Workers != nil && !res.Workers.Served() {
		d.Lines = append(d.Lines, res.Workers.Note)
	}
	for _, h := range res.Next {
		if h.Op == ops.OpQueueResume { // paused: the page's button resumes it
			d.Lines = append(d.Lines, h.Why+".")
		}
	}
	v.Title, v.Nav = d.Heading, "overview"
	s.render(w, r, http.StatusOK, "done", v, d)
}

// handOpening says who opened a breaker by hand and why.
func handOpening(o ops.HandOpening) string {
	if o.Reason == "" {
		return "by " + o.By
	}
	return fmt.Sprintf("by %s (%q)", o.By, strings.Join(strings.Fields(o.Reason), " "))
}

// openTimes are the times the circuits page offers to open a breaker
// for, as the form's for values.
var openTimes = []string{"15m", "30m", "1h", "2h", "4h", "8h", "24h"}

// circuitOpen opens a breaker by hand from the circuits page, for one of
// openTimes (any duration the operations layer takes is read).
func (s *server) circuitOpen(w http.ResponseWriter, r *http.Request, v *view) {
	v.Title, v.Nav = "Open a circuit breaker", "circuits"
	d, err := time.ParseDuration(strings.TrimSpace(r.PostFormValue("for")))
	if err != nil {
		s.refuse(w, r, v, http.StatusBadRequest, "For how long? Give a duration such as 30m or 2h, as the circuits page offers.")
		return
	}
	res, err := s.svc.CircuitOpen(r.Context(), ops.CircuitOpenRequest{Name: strings.TrimSpace(r.PostFormValue("name")), For: d,
		Reason: strings.TrimSpace(r.PostFormValue("reason"))})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	// The page says how long it stays open, on the clock render uses, set
	// here as render would, after the operation that measured it.
	v.now = s.ages()
	done := done{Heading: "Circuit breaker " + res.Name + " opened", Lines: []string{
		fmt.Sprintf("It was %s, and is open until %s (%s): the jobs whose handlers use it wait, no attempt used, while the queues' other jobs run. Then the next job probes the downstream.",
			res.Was, res.OpenUntil.UTC().Format("2006-01-02 15:04:05 UTC"), v.ago(res.OpenUntil)),
		"Reset it from the circuits page to end this early: the jobs it held are released."},
		Links: []link{{"/circuits", "Back to the circuit breakers"}}}
	if o := res.Replaced; o != nil {
		done.Lines = append(done.Lines, "This replaces the opening by hand "+handOpening(*o)+".")
	}
	v.Title = done.Heading
	s.render(w, r, http.StatusOK, "done", v, done)
}

func (s *server) circuitReset(w http.ResponseWriter, r *http.Request, v *view) {
	res, err := s.svc.CircuitReset(r.Context(), ops.CircuitResetRequest{Name: strings.TrimSpace(r.PostFormValue("name")),
		EndOpeningByHand: r.PostFormValue("end_opening_by_hand") == "1"})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	d := done{Heading: "Circuit breaker " + res.Name + " reset", Lines: []string{fmt.Sprintf("It was %s with %s in a row, and is %s now: calls go through again. If the downstream still fails, it opens again after its threshold.", res.Was, plural.Count(res.FailuresBefore, "failure", "failures"), res.State)},
		Links: []link{{"/circuits", "Back to the circuit breakers"}}}
	switch {
	case res.Released > ops.ReleaseAtOnce:
		d.Lines = append(d.Lines, fmt.Sprintf("%s it held while open are released now, in the order held: the first %d at once, the rest spread over its cool-off (%s at most), so as not to meet the downstream with them all at once.",
			plural.Count(res.Released, "job", "jobs"), ops.ReleaseAtOnce, ops.FormatAge(ops.MaxReleaseWindow)))
	case res.Released > 0:
		d.Lines = append(d.Lines, fmt.Sprintf("%s it held while open %s visible now, to run at once.", plural.Count(res.Released, "job", "jobs"), plural.Of(res.Released, "is", "are")))
	}
	if o := res.WasOpenedByHand; o != nil {
		d.Lines = append(d.Lines, "This ends the opening by hand "+handOpening(*o)+".")
	}
	if !res.Changed {
		d.Heading = "Circuit breaker " + res.Name + " was already closed"
		d.Lines = []string{"It had no failure counted: the reset changed nothing (someone may have reset it already)."}
	}
	v.Title, v.Nav = d.Heading, "circuits"
	s.render(w, r, http.StatusOK, "done", v, d)
}

// auditData is the audit page's.
type auditData struct {
	Client, Op, Since string
	Page              ops.AuditPage
	Cursor            string
	// SendsLeftOut: the page left sends out, as it does unless an
	// operation is named; it links the entries with them.
	SendsLeftOut bool
	// Unfinished: an entry of the page did not finish; the page links
	// what is there now.
	Unfinished bool
}

// Target is the page of what an entry acted on, when the dashboard has
// one: the dead letters its filter selects (or the DLQ its ids were in, or
// were restored to), the page of the queue paused or resumed, or the
// circuit breakers.
func (auditData) Target(e ops.AuditEntry) string {
	var args struct {
		Filter ops.DeadFilter `json:"filter"`
		IDs    []int64        `json:"ids"`
		Queue  string         `json:"queue"`
	}
	switch {
	case e.Op == ops.OpDLQRestore:
		// The restored messages are back in the DLQ.
		if json.Unmarshal(e.Arguments, &args) != nil {
			return ""
		}
		return pageLink("/dlq", "queue", args.Queue)
	case strings.HasPrefix(e.Op, "dlq_") && e.Op != ops.OpDLQPurge:
		if json.Unmarshal(e.Arguments, &args) != nil {
			return ""
		}
		return pageLink("/dlq", filterArgs(args.Filter)...)
	case e.Op == ops.OpQueuePause || e.Op == ops.OpQueueResume:
		if json.Unmarshal(e.Arguments, &args) != nil || args.Queue == "" {
			return "/"
		}
		return queuePath(args.Queue)
	case e.Op == ops.OpCircuitReset, e.Op == ops.OpCircuitOpen:
		return "/circuits"
	}
	return ""
}

func (s *server) audit(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	d := auditData{Client: strings.TrimSpace(q.Get("client")), Op: strings.TrimSpace(q.Get("op")), Since: strings.TrimSpace(q.Get("since")), Cursor: q.Get("cursor")}
	page, err := s.svc.Audit(r.Context(), ops.AuditRequest{Client: d.Client, Op: d.Op, Since: d.Since, Cursor: d.Cursor})
	if err != nil {
		// The operation is the "tool" of an audit request, and "op" here.
		s.fail(w, r, v, ops.NameField(err, func(string) string { return "op" }, "tool"))
		return
	}
	d.Page, d.SendsLeftOut = page, sendsLeftOut(page)
	d.Unfinished = slices.ContainsFunc(page.Items, func(e ops.AuditEntry) bool { return e.Unfinished })
	d.Page.Notes = ops.WordAsks(page.Notes, page.Asks, pageNote(""))
	v.Title, v.Nav = "Audit log", "audit"
	s.render(w, r, http.StatusOK, "audit", v, d)
}

func (s *server) workers(w http.ResponseWriter, r *http.Request, v *view) {
	ws, err := s.svc.Workers(r.Context(), ops.WorkersRequest{All: true})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	v.Title, v.Nav = "Workers", "workers"
	s.render(w, r, http.StatusOK, "workers", v, ws)
}

func (s *server) circuits(w http.ResponseWriter, r *http.Request, v *view) {
	// ?name= is the one breaker a health reason links to.
	cs, err := s.svc.Circuits(r.Context(), ops.CircuitsRequest{Name: r.URL.Query().Get("name"), All: true})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	v.Title, v.Nav = "Circuit breakers", "circuits"
	s.render(w, r, http.StatusOK, "circuits", v, cs)
}

// selectedData is the preview or result of a retry or discard of the
// messages selected on a list page.
type selectedData struct {
	Verb     string
	Queue    string
	IDs      []int64
	Outcomes []ops.IDOutcome
	// Count is how many moved (in a preview: would move).
	Count  int
	DryRun bool
	// DeadlinesPassed counts the messages a retry leaves dead because their
	// deadline passed, unless it clears the deadlines.
	DeadlinesPassed int
	// CameBack counts the messages of a retry that had been retried out
	// of a DLQ before and died again.
	CameBack int
	// Undo links the way back from a discard.
	Undo []link
}

// Heading is the page's heading, and its title: what the preview offers
// to do, or what was done.
func (d selectedData) Heading() string {
	if d.DryRun {
		if d.Verb == "retry" {
			return "Retry selected messages"
		}
		return "Discard selected messages"
	}
	verb := "Discarded "
	if d.Verb == "retry" {
		verb = "Retried "
	}
	return verb + num(d.Count) + " " + plural.Of(d.Count, "message", "messages")
}

// selected reads the verb, DLQ and ids of a selection, from a query or a
// form; ok is false, with the reason, when they do not name one.
func selected(v url.Values) (d selectedData, why string) {
	d.Verb, d.Queue = v.Get("verb"), strings.TrimSpace(v.Get("queue"))
	if d.Verb != "retry" && d.Verb != "discard" {
		return d, "Choose what to do with the selected messages: retry or discard."
	}
	for _, s := range v["id"] {
		id, err := ops.ParseID(s)
		if err != nil {
			return d, "The selection holds " + strconv.Quote(s) + ", which is not a message id (" + ops.IDForm + "): select the messages on the list page."
		}
		d.IDs = append(d.IDs, id)
	}
	switch {
	case len(d.IDs) == 0:
		return d, "Nothing is selected: tick the messages on a list page of one queue's dead letters, then choose retry or discard."
	case d.Queue == "":
		return d, "The selection names no queue, and ids are per queue: select the messages on a list page filtered to one queue's dead letters."
	}
	return d, ""
}

// runSelected previews (dryRun) or runs a retry or discard by ids.
func (s *server) runSelected(w http.ResponseWriter, r *http.Request, v *view, q url.Values, dryRun bool) {
	d, why := selected(q)
	v.Title, v.Nav = "Selected dead messages", "dlq"
	if why != "" {
		s.refuse(w, r, v, http.StatusBadRequest, why)
		return
	}
	if !v.CanWrite {
		s.refuse(w, r, v, http.StatusForbidden, "This server is read-only: retries and discards are off.")
		return
	}
	d.DryRun = dryRun
	filter := ops.DeadFilter{Queue: d.Queue}
	if d.Verb == "retry" {
		// The preview shows what a retry leaves: its form asks whether to
		// clear the deadlines that passed.
		res, err := s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{IDs: d.IDs, Filter: filter, DryRun: dryRun,
			ClearDeadline: !dryRun && q.Get("clear_deadline") == "1"})
		if err != nil {
			s.fail(w, r, v, err)
			return
		}
		d.Outcomes, d.Count, d.DeadlinesPassed, d.CameBack = res.Outcomes, res.Retried, res.DeadlinesPassed, res.CameBack
	} else {
		res, err := s.svc.DLQDiscard(r.Context(), ops.DLQDiscardRequest{IDs: d.IDs, Filter: filter, DryRun: dryRun})
		if err != nil {
			s.fail(w, r, v, err)
			return
		}
		d.Outcomes, d.Count, d.Undo = res.Outcomes, res.Discarded, undoLinks(res.Next)
	}
	v.Title = d.Heading()
	s.render(w, r, http.StatusOK, "selected", v, d)
}

func (s *server) selectedPreview(w http.ResponseWriter, r *http.Request, v *view) {
	s.runSelected(w, r, v, r.URL.Query(), true)
}

func (s *server) selectedRun(w http.ResponseWriter, r *http.Request, v *view) {
	s.runSelected(w, r, v, r.PostForm, false)
}
