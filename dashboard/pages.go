package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// The overview's bounds: how many health reasons and queues it lists
// unless asked for all (?reasons=all, ?queues=all). Hundreds of queues
// would otherwise make a page too long to read during an incident, and
// slow to load.
const (
	overviewReasons = 20
	overviewQueues  = 50
)

// overviewData is the overview's: the health verdict, the queues that most
// need a look and their throughput charts.
type overviewData struct {
	Health ops.Health
	Queues []ops.QueueStats
	// QueuesOmitted counts the queues past the table's bound.
	QueuesOmitted int
	// AllReasons and AllQueues are this page with every reason, and
	// every queue, listed.
	AllReasons, AllQueues string
	// Name is the text the queues' names contain (?name=), QueuesFiltered
	// counts the queues it leaves out, and ClearName is this page
	// without it.
	Name           string
	QueuesFiltered int
	ClearName      string
	// Kept are the page's other parameters, for the form that finds a
	// queue by name.
	Kept []param
	// LiveSrc is the address of the page's live counts: /live with the
	// parameters that choose the queues listed.
	LiveSrc string
	// QueueSet identifies the names of every queue (ops.Overview), for
	// the live counts to tell queues created or dropped.
	QueueSet   string
	Throughput throughputData
}

// param is a query parameter a form sends back as it came.
type param struct{ Name, Value string }

// QueuesTotal is how many queues there are, listed or not, of those whose
// names contain Name.
func (d overviewData) QueuesTotal() int { return len(d.Queues) + d.QueuesOmitted }

// QueuesEvery is how many queues there are, whatever their names.
func (d overviewData) QueuesEvery() int { return d.QueuesTotal() + d.QueuesFiltered }

// Finder reports whether the page offers to find a queue by name: when
// it does not list every queue, or was asked to find one.
func (d overviewData) Finder() bool { return d.QueuesEvery() > overviewQueues || d.Name != "" }

// ReasonsTotal is how many reasons the verdict has, listed or not.
func (d overviewData) ReasonsTotal() int { return len(d.Health.Reasons) + d.Health.Omitted }

// overviewBounds are the bounds of the overview u asks for: each list
// bounded unless its parameter is "all".
func overviewBounds(u *url.URL) ops.OverviewRequest {
	req := ops.OverviewRequest{MaxReasons: overviewReasons, MaxQueues: overviewQueues}
	if u.Query().Get("reasons") == "all" {
		req.MaxReasons = 0
	}
	if u.Query().Get("queues") == "all" {
		req.MaxQueues = 0
	}
	req.QueueNameContains = strings.TrimSpace(u.Query().Get("name"))
	return req
}

// liveSrc is the address of the live counts of the overview u asks for:
// /live with the parameters that choose its queues.
func liveSrc(u *url.URL) string {
	q := url.Values{}
	for _, k := range []string{"queues", "name"} {
		if v := u.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return "/live"
	}
	return "/live?" + q.Encode()
}

// overviewKept are the parameters of u besides the name searched for.
func overviewKept(u *url.URL) []param {
	var out []param
	for _, k := range []string{"window", "chart", "refresh", "reasons", "queues"} {
		if v := u.Query().Get(k); v != "" {
			out = append(out, param{Name: k, Value: v})
		}
	}
	return out
}

// overviewWithout is the overview u asks for without the parameter key.
func overviewWithout(u *url.URL, key string) string {
	q := u.Query()
	q.Del(key)
	if len(q) == 0 {
		return "/"
	}
	return "/?" + q.Encode()
}

// overviewWith is the overview u asks for with key set to value, its other
// parameters (window, chart, refresh) kept, at the section anchor names.
func overviewWith(u *url.URL, key, value, anchor string) string {
	q := u.Query()
	q.Set(key, value)
	return "/?" + q.Encode() + "#" + anchor
}

func (s *server) overview(w http.ResponseWriter, r *http.Request, v *view) {
	req := overviewBounds(r.URL)
	o, err := s.svc.Overview(r.Context(), req)
	if err != nil {
		var more []link
		if errors.Is(err, ops.ErrInvalid) {
			more = append(more, link{Href: overviewWithout(r.URL, "name"), Text: "Show the overview without finding a queue by name"})
		}
		s.fail(w, r, v, err, more...)
		return
	}
	chosen, links := r.URL.Query().Get("chart"), chartParams(r.URL, v.Refresh)
	tp, err := s.svc.Throughput(r.Context(), chartBounds(r.URL, req, chosen))
	if err != nil {
		// A window the dashboard does not offer: the ones it does.
		var windows []link
		if errors.Is(err, ops.ErrInvalid) {
			for _, l := range throughputView(ops.ThroughputResult{}, links, "").Windows {
				windows = append(windows, link{Href: l.Href, Text: "Show the throughput of the " + strings.ToLower(l.Text)})
			}
		}
		s.fail(w, r, v, err, windows...)
		return
	}
	if chosen != "" && !slices.ContainsFunc(tp.Queues, func(q ops.QueueThroughput) bool { return q.Queue == chosen }) {
		s.refuse(w, r, v, http.StatusNotFound, "There is no queue "+strconv.Quote(chosen)+" to chart: follow the link of a queue's chart on the overview, or leave ?chart= out.")
		return
	}
	d := overviewData{Health: o.Health, Queues: o.Queues, QueuesOmitted: o.QueuesOmitted,
		AllReasons: overviewWith(r.URL, "reasons", "all", "health-h"), AllQueues: overviewWith(r.URL, "queues", "all", "queues-h"),
		Name: req.QueueNameContains, QueuesFiltered: o.QueuesFiltered, ClearName: overviewWithout(r.URL, "name"), Kept: overviewKept(r.URL),
		LiveSrc: liveSrc(r.URL), QueueSet: o.QueueSet, Throughput: throughputView(tp, links, chosen)}
	d.Throughput.All = overviewWith(r.URL, "queues", "all", "tp-h")
	v.Title, v.Nav = "Overview", "overview"
	s.render(w, r, http.StatusOK, "overview", v, d)
}

// chartBounds is the throughput the overview u asks for shows: the
// charts of the busiest queues of those it lists by name, and of the one
// chosen; the other queues named up to a bound, unless u asks for every
// queue.
func chartBounds(u *url.URL, o ops.OverviewRequest, chosen string) ops.ThroughputRequest {
	req := ops.ThroughputRequest{Window: u.Query().Get("window"), MaxQueues: maxCharts, MaxNames: maxChartNames,
		QueueNameContains: o.QueueNameContains, Chart: chosen}
	if o.MaxQueues == 0 {
		req.MaxNames = 0
	}
	return req
}

// deadFilter reads the dead-letter filter of a query or form.
func deadFilter(q url.Values) ops.DeadFilter {
	get := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return ops.DeadFilter{Queue: get("queue"), Kind: q.Get("kind"), ErrorClass: q.Get("error_class"), Reason: get("reason"),
		Since: get("since"), Until: get("until"), Text: q.Get("text"), Group: get("group")}
}

// filterArgs are a filter's query arguments, for pageLink.
func filterArgs(f ops.DeadFilter) []any {
	return []any{"queue", f.Queue, "kind", f.Kind, "error_class", f.ErrorClass, "reason", f.Reason, "since", f.Since, "until", f.Until, "text", f.Text, "group", f.Group}
}

// deadData is what the dead-letter pages share: the filter shown in their
// form.
type deadData struct {
	Filter  ops.DeadFilter
	Reasons []string
	// Action is the page the filter form shows.
	Action string
	// Refresh is the page's auto-refresh in seconds, which its filter
	// form keeps; 0 for none.
	Refresh int
	// Sizes shows, in the filter form, the controls of a list of dead
	// messages by payload size (the list's page alone), MinPayloadBytes
	// and Order their values as given; its pages' links keep them.
	Sizes           bool
	MinPayloadBytes string
	Order           string
	// ByClass: the groups page counts by error class across the DLQs
	// (its by=error_class), which its filter form keeps.
	ByClass bool
}

// Sized reports whether a minimum payload size narrows the list, which
// the retry and discard of the filter do not take.
func (d deadData) Sized() bool { return d.MinPayloadBytes != "" && d.MinPayloadBytes != "0" }

// Link is the path p with the filter in its query.
func (d deadData) Link(p string, more ...any) string {
	return pageLink(p, append(filterArgs(d.Filter), more...)...)
}

// Page is Link for a page that lists (the groups, a group's messages,
// their next pages): it keeps the page's auto-refresh, as the filter form
// does. An action's preview, linked by Link, does not refresh.
func (d deadData) Page(p string, more ...any) string {
	if d.ByClass && p == "/dlq" {
		more = append([]any{"by", ops.SummaryByErrorClass}, more...)
	}
	if d.Sizes {
		more = append([]any{"min_payload_bytes", d.MinPayloadBytes, "order", d.Order}, more...)
	}
	return d.Link(p, append([]any{"refresh", d.Refresh}, more...)...)
}

// Filtered reports whether the filter selects less than everything.
func (d deadData) Filtered() bool { return !d.Filter.IsZero() }

// Discarded is the page of the messages discarded from the DLQ of the
// filter's queue, "" when it names no queue.
func (d deadData) Discarded() string {
	if d.Filter.Queue == "" {
		return ""
	}
	return discardedPath(d.Filter.Queue, "", "")
}

// groupsData is the dead-letter groups page's.
type groupsData struct {
	deadData
	Summary ops.DLQSummary
	// Cursor is the page's, "" on the first page.
	Cursor string
}

// GroupFilter is the filter that selects exactly a group's messages: its
// key (kind and error class alone select every group that shares them),
// with its DLQ, kind and error class to show in the filter form, and the
// page's auto-refresh for its links to the group's messages.
func (d groupsData) GroupFilter(g ops.DeadGroup) deadData {
	return deadData{Filter: ops.DeadFilter{Queue: g.DLQ, Kind: filterKind(g.Kind), ErrorClass: g.ErrorClass, Group: g.Group}, Refresh: d.Refresh}
}

// ClassFilter is the filter of the page with the messages of an error
// class of a summary by error class, in dlq or, "" for, every DLQ: the
// page's filter with that class, and its auto-refresh. A class shown with
// a secret redacted, which no stored class equals, has none (Link "").
func (d groupsData) ClassFilter(class, dlq string) deadData {
	f := d.Filter
	f.ErrorClass = filterKind(class)
	if dlq != "" {
		f.Queue = dlq
	}
	return deadData{Filter: f, Refresh: d.Refresh}
}

// filterKind is a shown kind as a filter: "" (every kind) for one shown
// with a secret redacted, which no stored kind equals.
func filterKind(shown string) string {
	if strings.Contains(shown, ops.Redacted) {
		return ""
	}
	return shown
}

func (s *server) deadGroups(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	f := deadFilter(q)
	// Every group the store returns at once, the largest first; past
	// them, the next page's cursor.
	byClass := strings.TrimSpace(q.Get("by")) == ops.SummaryByErrorClass
	sum, err := s.svc.DLQSummary(r.Context(), ops.DLQSummaryRequest{Filter: f, By: q.Get("by"), All: true, Cursor: q.Get("cursor")})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	sum.Notes = ops.WordAsks(sum.Notes, sum.Asks, pageNote(""))
	v.Title, v.Nav = ofQueue("Dead letters", f.Queue), "dlq"
	s.render(w, r, http.StatusOK, "groups", v, groupsData{deadData: deadData{Filter: f, Reasons: ops.Reasons, Action: "/dlq", Refresh: v.Refresh, ByClass: byClass}, Summary: sum, Cursor: q.Get("cursor")})
}

// listData is the list of dead messages'.
type listData struct {
	deadData
	List   ops.DLQList
	Cursor string
}

func (s *server) deadList(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	f := deadFilter(q)
	req := ops.DLQListRequest{Filter: f, Order: strings.TrimSpace(q.Get("order")), Cursor: q.Get("cursor")}
	minSize := strings.TrimSpace(q.Get("min_payload_bytes"))
	if minSize != "" {
		n, err := strconv.ParseInt(minSize, 10, 64)
		if err != nil {
			s.refuse(w, r, v, http.StatusBadRequest, "The minimum payload size is a whole number of bytes, such as 100000, or empty for every size.")
			return
		}
		req.MinPayloadBytes = n
	}
	list, err := s.svc.DLQList(r.Context(), req)
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	list.Notes = ops.WordAsks(list.Notes, list.Asks, pageNote(""))
	v.Title, v.Nav = ofQueue("Dead messages", f.Queue), "dlq"
	s.render(w, r, http.StatusOK, "list", v, listData{deadData: deadData{Filter: f, Reasons: ops.Reasons, Action: "/dlq/messages", Refresh: v.Refresh,
		Sizes: true, MinPayloadBytes: minSize, Order: req.Order}, List: list, Cursor: q.Get("cursor")})
}

// messageData is a dead message's page.
type messageData struct {
	Msg            ops.DeadMessage
	PayloadAllowed bool
	PayloadAsked   bool
	// Editor is the form that retries the message with a corrected
	// payload, shown when the server is not read-only.
	Editor editor
}

func (s *server) messageData(m ops.DeadMessage, asked bool) messageData {
	m.Notes = ops.WordAsks(m.Notes, m.Asks, pageNote("payload hidden: “Show the payload” shows it (secrets stay redacted)"))
	return messageData{Msg: m, PayloadAllowed: s.svc.AllowsPayloads(), PayloadAsked: asked, Editor: newEditor(m)}
}

func (s *server) deadMessage(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	id, err := ops.ParseID(q.Get("id"))
	if err != nil {
		s.refuse(w, r, v, http.StatusBadRequest, "Which message? Give its id as ?id=, as the links of the dead-letter list do: "+ops.IDForm+".")
		return
	}
	asked := q.Get("payload") == "1"
	m, err := s.svc.DLQShow(r.Context(), ops.DLQShowRequest{Queue: strings.TrimSpace(q.Get("queue")), MsgID: id, IncludePayload: asked})
	if err != nil {
		s.fail(w, r, v, err)
		return
	}
	v.Title, v.Nav = messageTitle(m), "dlq"
	s.render(w, r, http.StatusOK, "message", v, s.messageData(m, asked))
}

// bulkData is the preview or result of a retry or discard by filter.
type bulkData struct {
	deadData
	// Verb is "retry" or "discard".
	Verb string
	// Count is how many messages moved (in a preview: would move); Moved
	// lists the first of them, Omitted counts the rest.
	Count        int
	Moved        []bulkItem
	Omitted      int
	LimitReached bool
	// Left counts, when LimitReached, the messages the filter still
	// selects (in a preview: would); 0 when they could not be counted.
	Left int64
	// Expect binds the confirmation to the preview's messages.
	Expect     string
	Failed     int
	FirstError string
	// DeadlinesPassed counts, in a retry's preview, the messages whose
	// deadline has passed: the retry must clear it (the form asks).
	DeadlinesPassed int
	// CameBack counts, in a retry's preview, the messages that had been
	// retried out of a DLQ before and died again.
	CameBack int
	// Workers says which queues a worker serves, the first of them;
	// WorkersOmitted counts the others.
	Workers        []ops.QueueWorkers
	WorkersOmitted int
	// Changed: the confirmation was refused because the messages the
	// filter selects changed since the preview.
	Changed string
	// Next are the next steps of what was done.
	Next []ops.Hint
	// Paused says, for a retry, which queues the messages go back to are
	// paused: they wait there, unread, until each is resumed.
	Paused []string
	// VisibleUntil is, after a paced retry, when its last message
	// becomes visible; zero otherwise.
	VisibleUntil time.Time
}

// Undo links the pages of the messages a discard moved, to restore
// them, as its next steps name them.
func (d bulkData) Undo() []link { return undoLinks(d.Next) }

// bulkItem is one message of a bulk action: its DLQ and id, and for a
// retry the queue it goes back to.
type bulkItem struct {
	DLQ   string
	ID    int64
	Queue string
}

func retryBulk(f ops.DeadFilter, r ops.DLQRetry) bulkData {
	d := bulkData{deadData: deadData{Filter: f}, Verb: "retry", Count: r.Retried, Omitted: r.MovedOmitted, LimitReached: r.LimitReached, Left: r.Left,
		Expect: r.Expect, Failed: r.Failed, FirstError: r.FirstError, Workers: r.Workers, WorkersOmitted: r.WorkersOmitted, CameBack: r.CameBack, Next: r.Next}
	for _, m := range r.Moved {
		d.Moved = append(d.Moved, bulkItem{DLQ: m.DLQ, ID: m.DLQMsgID, Queue: m.Queue})
	}
	if r.VisibleUntil != nil {
		d.VisibleUntil = *r.VisibleUntil
	}
	for _, h := range r.Next {
		if h.Op == ops.OpQueueResume {
			d.Paused = append(d.Paused, h.Why)
		}
	}
	return d
}

func discardBulk(f ops.DeadFilter, r ops.DLQDiscard) bulkData {
	d := bulkData{deadData: deadData{Filter: f}, Verb: "discard", Count: r.Discarded, Omitted: r.MovedOmitted, LimitReached: r.LimitReached, Left: r.Left,
		Expect: r.Expect, Failed: r.Failed, FirstError: r.FirstError, Next: r.Next}
	for _, m := range r.Moved {
		d.Moved = append(d.Moved, bulkItem{DLQ: m.DLQ, ID: m.MsgID})
	}
	return d
}

// bulkPreview is the dry run of a retry or discard by filter: exactly
// what would move, and a form that confirms it, bound to that set.
func (s *server) bulkPreview(verb string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, v *view) {
		// An age (since 20m) is taken as the instant it is now: the form
		// confirms the preview's set minutes later, by when the age
		// selects another window.
		f := deadFilter(r.URL.Query()).Pinned(s.ages())
		v.Title, v.Nav = ofQueue("Preview: "+verb+" dead messages", f.Queue), "dlq"
		if !v.CanWrite {
			s.refuse(w, r, v, http.StatusForbidden, "This server is read-only: retries and discards are off. The dead-letter pages still show every message.")
			return
		}
		var d bulkData
		if verb == "retry" {
			res, err := s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{Filter: f, DryRun: true, All: f.IsZero()})
			passed := res.DeadlinesPassed
			if err == nil && passed > 0 {
				// What moves once their deadlines are cleared, as the
				// form then asks: every message selected.
				res, err = s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{Filter: f, DryRun: true, All: f.IsZero(), ClearDeadline: true})
			}
			if err != nil {
				s.fail(w, r, v, err)
				return
			}
			d = retryBulk(f, res)
			d.DeadlinesPassed = passed
		} else {
			// The list of every dead message offers its discard too.
			res, err := s.svc.DLQDiscard(r.Context(), ops.DLQDiscardRequest{Filter: f, DryRun: true, All: f.IsZero()})
			if err != nil {
				s.fail(w, r, v, err)
				return
			}
			d = discardBulk(f, res)
		}
		s.render(w, r, http.StatusOK, "bulk", v, d)
	}
}

// formRate reads a retry form's pace, messages a second: 0 when left
// empty, false when it is no number. A pace given is checked as given
// (ops.CheckGivenRate): 0 would never make a message visible, where 0 in
// the request is no pace.
func formRate(s string) (float64, bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, true, nil
	}
	rate, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, nil
	}
	return rate, true, ops.CheckGivenRate(rate)
}

// bulk runs a retry or discard by filter confirmed on its preview: it
// moves exactly the messages the preview showed, or nothing.
func (s *server) bulk(verb string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, v *view) {
		f := deadFilter(r.PostForm)
		expect := r.PostFormValue("expect")
		v.Title, v.Nav = strings.ToUpper(verb[:1])+verb[1:]+" dead messages", "dlq"
		if expect == "" {
			s.refuse(w, r, v, http.StatusBadRequest, "A "+verb+" from the dashboard confirms a preview: open the preview of what to "+verb+" and confirm it there.")
			return
		}
		var d bulkData
		var err error
		if verb == "retry" {
			rate, ok, rateErr := formRate(r.PostFormValue("rate"))
			if !ok {
				s.refuse(w, r, v, http.StatusBadRequest, "The pace is not a number: give messages a second, such as 5 or 0.5, or leave it empty to retry them all at once.")
				return
			}
			if rateErr != nil {
				s.fail(w, r, v, rateErr)
				return
			}
			var res ops.DLQRetry
			res, err = s.svc.DLQRetry(r.Context(), ops.DLQRetryRequest{Filter: f, Expect: expect, All: f.IsZero(),
				ClearDeadline: r.PostFormValue("clear_deadline") == "1", Rate: rate})
			d = retryBulk(f, res)
		} else {
			var res ops.DLQDiscard
			// The person confirmed on the preview: that is the go-ahead.
			res, err = s.svc.DLQDiscard(r.Context(), ops.DLQDiscardRequest{Filter: f, Expect: expect, Confirm: true, All: f.IsZero()})
			d = discardBulk(f, res)
		}
		if err != nil {
			if errChanged(err) {
				d = bulkData{deadData: deadData{Filter: f}, Verb: verb}
				if d.Changed = ops.ChangedCause(err); d.Changed == "" {
					d.Changed, _ = ops.RedactText(err.Error())
				}
				s.render(w, r, http.StatusConflict, "bulk", v, d)
				return
			}
			s.fail(w, r, v, err)
			return
		}
		s.render(w, r, http.StatusOK, "bulkdone", v, d)
	}
}

// ofQueue is the title of a page about the messages of queue, when one
// is named: a browser's tabs and history then tell the pages apart.
func ofQueue(title, queue string) string {
	if queue == "" {
		return title
	}
	return title + " of " + queue
}

// messageTitle is the title of a dead message's page: its id is per DLQ.
func messageTitle(m ops.DeadMessage) string {
	return "Dead message " + strconv.FormatInt(m.MsgID, 10) + " in " + m.DLQ
}
