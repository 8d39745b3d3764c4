package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/pgbus/pgbus/ops"
)

// queuePath is the address of a queue's page.
func queuePath(name string) string { return "/queues/" + url.PathEscape(name) }

// queueData is a queue's page: its stats and a page of its live messages.
type queueData struct {
	Stats ops.QueueStats
	Msgs  ops.LiveMessages
	// State is the state the messages are filtered to, "" for every one;
	// States are those the filter offers.
	State  string
	States []string
	Cursor string
	// PayloadAsked (?payload=1) shows each message's headers, and its
	// payload when the server shows payloads (PayloadAllowed), as a dead
	// message's page does.
	PayloadAllowed, PayloadAsked bool
	// Refresh is the page's auto-refresh in seconds, which its links to
	// itself (its next page, its payloads shown or hidden) keep; 0 for
	// none.
	Refresh int
}

// Link is the address of this page with its state filter, payloads and
// auto-refresh as they are, and the query pairs kv (a cursor) added.
func (d queueData) Link(kv ...any) string {
	payload := ""
	if d.PayloadAsked {
		payload = "1"
	}
	return pageLink(queuePath(d.Stats.Queue), append([]any{"state", d.State, "payload", payload, "refresh", d.Refresh}, kv...)...)
}

// WithPayloads is the first page of the same messages, their payloads
// shown (show) or not.
func (d queueData) WithPayloads(show bool) string {
	d.PayloadAsked = show
	return d.Link()
}

// AllStates is the first page of the messages in every state.
func (d queueData) AllStates() string {
	d.State = ""
	return d.Link()
}

// Levels reports whether the messages listed carry their priority level:
// the queue has levels, which number their messages each on its own, so
// the level tells apart two messages of the same id.
func (d queueData) Levels() bool {
	return slices.ContainsFunc(d.Msgs.Items, func(m ops.LiveMessage) bool { return m.Priority != nil })
}

// LastFailure is a message's newest failure, if it has one.
func (queueData) LastFailure(m ops.LiveMessage) *ops.Failure {
	if len(m.History) == 0 {
		return nil
	}
	return &m.History[len(m.History)-1]
}

// queuePage is a queue's page: its stats, and its live messages a page at
// a time, in one state or all.
func (s *server) queuePage(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	name := r.PathValue("name")
	d := queueData{State: q.Get("state"), States: ops.LiveStates, Cursor: q.Get("cursor"),
		PayloadAllowed: s.svc.AllowsPayloads(), PayloadAsked: q.Get("payload") == "1", Refresh: v.Refresh}
	msgs, err := s.svc.QueueMessages(r.Context(), ops.QueueMessagesRequest{Queue: name, State: d.State, Cursor: d.Cursor, IncludePayload: d.PayloadAsked})
	var stats ops.QueueStatsResult
	if err == nil {
		// Archives are left uncounted: the page does not show them, and
		// counting a large one takes long.
		stats, err = s.svc.QueueStats(r.Context(), ops.QueueStatsRequest{Queue: name, NoArchive: true})
	}
	if err == nil && len(stats.Queues) != 1 {
		err = errors.New("the stats of queue " + name + " came back empty")
	}
	if err != nil {
		// The pause and resume forms are sent to /queues/pause and
		// /queues/resume: opened as a page (the page after a pause,
		// opened again), such an address is no queue's page, unless a
		// queue of that name was dropped, whose page says so.
		if errors.Is(err, ops.ErrNotFound) && s.isAction(r.URL) && !s.wasQueue(r, name) {
			s.wrongMethod(w, r, v, []string{http.MethodPost})
			return
		}
		var more []link
		if errors.Is(err, ops.ErrInvalid) && (d.State != "" || d.Cursor != "") {
			more = append(more, link{Href: queuePath(name), Text: "Show every live message of the queue, from the first page"})
		}
		s.fail(w, r, v, err, more...)
		return
	}
	d.Stats, d.Msgs = stats.Queues[0], msgs
	d.Msgs.Notes = ops.WordAsks(msgs.Notes, msgs.Asks, pageNote("payloads hidden: “Show the headers and payloads” shows them (secrets stay redacted)"))
	v.Title, v.Nav = "Queue "+d.Stats.Queue, "overview"
	s.render(w, r, http.StatusOK, "queue", v, d)
}

// wasQueue reports whether name is a queue's that was dropped, its DLQ
// left: the stats of a queue no one made are not found.
func (s *server) wasQueue(r *http.Request, name string) bool {
	st, err := s.svc.QueueStats(r.Context(), ops.QueueStatsRequest{Queue: name, NoArchive: true})
	return err == nil && len(st.Queues) == 1 && st.Queues[0].Dropped
}

// isAction reports whether u's path is where a form of the dashboard is
// sent (POST).
func (s *server) isAction(u *url.URL) bool {
	_, pattern := s.mux.Handler(&http.Request{Method: http.MethodPost, URL: u})
	return pattern != "/" && pattern != ""
}
