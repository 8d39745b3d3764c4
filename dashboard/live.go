package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// liveCounts is what /live returns: the numbers the overview shows, as
// the operations health and queue_stats give them, for the overview's
// script to update in place. It takes the overview's parameters that
// choose the queues listed (?queues=all, ?name=) and has the counts of
// those queues only: of hundreds, every few seconds, the others' would
// weigh tens of kilobytes that no row shows. QueuesOmitted and
// QueuesFiltered count the others, and QueueSet identifies every queue's
// name, so that the script tells queues created or dropped, a creation
// and a drop between two of its requests included. The names are those of the operations' results.
type liveCounts struct {
	Status string `json:"status"`
	// Queues, Backlog, DeadMessages and Workers are the verdict's counts,
	// absent where it could not read them (ops.Health), which the script
	// leaves as they are shown.
	Queues  *int   `json:"queues,omitempty"`
	Backlog *int64 `json:"backlog,omitempty"`
	// BacklogEstimated and a queue's CountsEstimated say the count is an
	// estimate (ops.Health.BacklogEstimated, ops.QueueStats.CountsEstimated).
	BacklogEstimated bool        `json:"backlog_estimated,omitempty"`
	DeadMessages     *int64      `json:"dead_messages,omitempty"`
	Workers          *int        `json:"workers_running,omitempty"`
	CheckedAt        time.Time   `json:"checked_at"`
	QueueStats       []liveQueue `json:"queue_stats"`
	QueuesOmitted    int         `json:"queues_omitted"`
	QueuesFiltered   int         `json:"queues_filtered"`
	QueueSet         string      `json:"queue_set"`
}

// liveQueue is one queue's counts of the overview's table.
type liveQueue struct {
	Queue           string `json:"queue"`
	Visible         int64  `json:"visible"`
	CountsEstimated bool   `json:"counts_estimated,omitempty"`
	InFlight        int64  `json:"in_flight"`
	WaitingRetry    int64  `json:"waiting_retry"`
	Scheduled       int64  `json:"scheduled"`
	DLQ             string `json:"dlq"`
	DLQDepth        int64  `json:"dlq_depth"`
	Paused          bool   `json:"paused"`
	Dropped         bool   `json:"dropped,omitempty"`
}

// apiError is the body of a refused /live request.
type apiError struct {
	Error string `json:"error"`
}

// live returns the counts of the overview its parameters ask for in
// JSON: the queues it lists, in its order.
func (s *server) live(w http.ResponseWriter, r *http.Request, _ *view) {
	o, err := s.svc.Overview(r.Context(), overviewBounds(r.URL))
	if err != nil {
		s.failJSON(w, r, err)
		return
	}
	h := o.Health
	out := liveCounts{Status: h.Status, Queues: h.Queues, Backlog: h.Backlog, BacklogEstimated: h.BacklogEstimated, DeadMessages: h.DeadMessages, Workers: h.Workers,
		CheckedAt: h.CheckedAt, QueueStats: make([]liveQueue, 0, len(o.Queues)), QueuesOmitted: o.QueuesOmitted, QueuesFiltered: o.QueuesFiltered, QueueSet: o.QueueSet}
	for _, q := range o.Queues {
		out.QueueStats = append(out.QueueStats, liveQueue{Queue: q.Queue, Visible: q.Visible, CountsEstimated: q.CountsEstimated, InFlight: q.InFlight, WaitingRetry: q.WaitingRetry,
			Scheduled: q.Scheduled, DLQ: q.DLQ, DLQDepth: q.DLQDepth, Paused: q.Paused, Dropped: q.Dropped})
	}
	writeJSON(w, r, http.StatusOK, out)
}

// failJSON answers a failed operation of /live: its message redacted, as
// all text leaving the process.
func (s *server) failJSON(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	msg, _ := ops.RedactText(err.Error())
	switch {
	case errors.Is(err, ops.ErrInvalid):
		status = http.StatusBadRequest
	case ops.ErrorKind(err) == ops.KindUnavailable, errors.Is(err, ops.ErrNotReady):
		// Every open page asks every few seconds: a database down, or
		// one this process holds its calls for until the schema is
		// ready, is a passing state, told to proxies by 503, not an
		// error of pgbus.
		status = http.StatusServiceUnavailable
	case ops.ErrorKind(err) == ops.KindPermission:
		status = http.StatusForbidden
	}
	switch {
	case status == http.StatusForbidden:
		if s.forbidden.Due(time.Now()) {
			s.log.Warn("dashboard: live counts failed: the database refused this server's role a privilege; said here once a minute while it lasts", "path", s.base+r.URL.Path, "err", msg)
		}
	case status != http.StatusServiceUnavailable:
		s.log.Error("dashboard: live counts failed", "path", s.base+r.URL.Path, "err", msg)
	case s.unavailable.Due(time.Now()):
		s.log.Warn("dashboard: live counts failed: the database is unavailable; said here once a minute while it lasts", "path", s.base+r.URL.Path, "err", msg)
	}
	writeJSON(w, r, status, apiError{Error: "pgbus could not read the counts: " + msg + ". The page keeps its last numbers and asks again in a moment."})
}

// writeJSON sends v as the response to r, never cached: the counts
// change.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"the counts could not be encoded"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, r, status, "application/json; charset=utf-8", body)
}
