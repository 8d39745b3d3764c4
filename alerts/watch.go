// Package alerts tells a pager or a chat when pgbus needs a person: a
// Notifier checks the health verdict and the dead-letter groups through
// the operations layer at an interval, and posts a JSON webhook when the
// verdict changes or gives a new reason, when a new dead-letter group
// appears, or when a group grows by a threshold within a window. What
// changed since the last check is decided by a Watcher; each check's
// changes go out as one alert, so a burst of dead messages is one alert,
// not one per message.
package alerts

import (
	"time"

	"github.com/pgbus/pgbus/ops"
)

// Event types.
const (
	// EventHealthChanged: the health verdict is not what it was, or it
	// gives a reason it did not give at the last check.
	EventHealthChanged = "health_changed"
	// EventGroupNew: a dead-letter group appeared.
	EventGroupNew = "dlq_group_new"
	// EventGroupGrowing: a group grew by the threshold within the window.
	EventGroupGrowing = "dlq_group_growing"
)

// Event is one change an alert reports.
type Event struct {
	Type string `json:"type"`
	// Status and PreviousStatus are the health verdicts of a
	// health_changed event (PreviousStatus empty on the first check; the
	// same as Status when only the reasons changed), and Reasons why the
	// verdict is not OK.
	Status         string   `json:"status,omitempty"`
	PreviousStatus string   `json:"previous_status,omitempty"`
	Reasons        []Reason `json:"reasons,omitempty"`
	// ReasonsOmitted counts the reasons a JSON webhook was not sent, past
	// the first MaxJSONReasons (the new ones first).
	ReasonsOmitted int `json:"reasons_omitted,omitempty"`
	// Group is the dead-letter group of a dlq_group event.
	Group *Group `json:"group,omitempty"`
	// Growth is how many messages the group gained within Window.
	Growth        int64   `json:"growth,omitempty"`
	WindowSeconds float64 `json:"window_seconds,omitempty"`
}

// Reason is one reason of a verdict that is not OK.
type Reason struct {
	Status  string `json:"status"`
	Code    string `json:"code"`
	Queue   string `json:"queue,omitempty"`
	Message string `json:"message"`
	// New: the last check did not give this reason, so no alert reported
	// it while it lasted.
	New bool `json:"new,omitempty"`
}

// Group is a dead-letter group as an alert shows it: the dead messages of
// one source queue, kind, error class and error pattern.
type Group struct {
	DLQ          string `json:"dlq"`
	Queue        string `json:"queue"`
	Kind         string `json:"kind"`
	ErrorClass   string `json:"error_class"`
	ErrorPattern string `json:"error_pattern"`
	// Error is the representative error message, secrets redacted.
	Error       string    `json:"error"`
	Count       int64     `json:"count"`
	FirstDeadAt time.Time `json:"first_dead_lettered_at"`
	LastDeadAt  time.Time `json:"last_dead_lettered_at"`
	// RetriesFromDLQ is how often the group's newest message had been
	// retried out of a DLQ before it died again: a group that came back
	// after a retry did not have its cause fixed.
	RetriesFromDLQ int `json:"retries_from_dlq,omitempty"`
}

// groupKey identifies a dead-letter group from one check to the next.
type groupKey struct{ dlq, queue, kind, class, pattern string }

// sample is a group's count at one check.
type sample struct {
	at    time.Time
	count int64
}

type groupState struct {
	samples []sample
	// quietUntil: no new alert about the group before then, so that one
	// burst is one alert.
	quietUntil time.Time
	// reported is when the group was last reported, until the first check
	// after quietUntil: that check measures growth from the count then, so
	// that what the group gained while quiet is reported, not forgotten
	// for having been gained more than a window before that check.
	reported time.Time
	seen     time.Time
}

// Watcher decides what changed from one check to the next. Its zero value
// is not ready; use NewWatcher. It is not safe for concurrent use.
type Watcher struct {
	threshold int64
	window    time.Duration

	checked bool
	status  string
	// reasons are the reasons of the verdict at the last check, each
	// reported: one not among them is news, even under the same verdict,
	// and one that goes is forgotten, so that its return is news again.
	reasons map[ops.ReasonKey]bool
	groups  map[groupKey]*groupState
	// since, set by Resume until the next check, is when the last check
	// of another Watcher was: the groups dead-lettered first after it are
	// new.
	since time.Time
	// from and recent, set by Resume until the next check: a known group
	// had recent[k] messages fewer at from, the count its growth is
	// measured from.
	from   time.Time
	recent map[groupKey]int64
}

// NewWatcher returns a Watcher that reports a group's growth by threshold
// messages within window, and reports a group at most once per window:
// what it gains meanwhile is reported when that window ends, if it reaches
// threshold.
func NewWatcher(threshold int64, window time.Duration) *Watcher {
	return &Watcher{threshold: threshold, window: window, groups: map[groupKey]*groupState{}}
}

// Handover is what a Watcher resuming from another learns of the time no
// Watcher looked.
type Handover struct {
	// Last is when the other's last check was, Status the verdict it saw
	// and Reasons that verdict's reasons, each reported.
	Last    time.Time
	Status  string
	Reasons []ops.ReasonKey
	// Recent counts, by group, the messages dead-lettered since From: the
	// later of Last and the start of the growth window. A known group's
	// growth is measured from its count then, so that it counts what
	// died while no Watcher looked. Empty, a known group's growth counts
	// from the first check.
	From   time.Time
	Recent []ops.DeadGroup
}

// Resume makes the next check go on from the last check of another
// Watcher (the process that sent alerts before): the verdict it saw is the
// previous one, its reasons are known, the groups whose first message died
// after its time are new, the others known, and their growth since From
// counts.
func (w *Watcher) Resume(h Handover) {
	w.checked, w.status, w.since, w.from = true, h.Status, h.Last, h.From
	w.reasons = make(map[ops.ReasonKey]bool, len(h.Reasons))
	for _, k := range h.Reasons {
		w.reasons[k] = true
	}
	w.recent = make(map[groupKey]int64, len(h.Recent))
	for _, g := range mergeByKey(h.Recent) {
		w.recent[keyOf(g)] = g.Count
	}
}

// Observe takes one check's health verdict and dead-letter summary and
// returns what changed since the last. The first check is the baseline:
// the groups there are then are known, not new, and the verdict is
// reported only when it is not OK. The verdict is reported when it changes
// and when it gives a new reason (a second queue STALLED, a breaker open
// while dead letters already make it DEGRADED); a reason that lasts is
// reported once.
func (w *Watcher) Observe(now time.Time, h ops.Health, sum ops.DLQSummary) []Event {
	events := w.observeVerdict(h)
	for _, g := range mergeByKey(sum.Groups) {
		k := keyOf(g)
		st := w.groups[k]
		if st == nil {
			st = &groupState{}
			w.groups[k] = st
			if w.checked && (w.since.IsZero() || g.FirstDeadAt.After(w.since)) {
				events = append(events, Event{Type: EventGroupNew, Group: groupOf(g)})
				st.quietUntil, st.reported = now.Add(w.window), now
			} else if n, ok := w.recent[k]; ok {
				st.samples = append(st.samples, sample{w.from, max(g.Count-n, 0)})
			}
		}
		st.seen = now
		st.samples = append(st.samples, sample{now, g.Count})
		from := now.Add(-w.window)
		if !st.reported.IsZero() && st.reported.Before(from) {
			from = st.reported
		}
		st.trim(from)
		if now.Before(st.quietUntil) {
			continue
		}
		if growth := g.Count - st.samples[0].count; growth >= w.threshold {
			events = append(events, Event{Type: EventGroupGrowing, Group: groupOf(g), Growth: growth, WindowSeconds: w.window.Seconds()})
			st.quietUntil, st.reported = now.Add(w.window), now
		} else {
			st.reported = time.Time{}
		}
	}
	for k, st := range w.groups {
		// A group gone (retried, discarded) is forgotten once quiet, so
		// that its return is news again, but not within the same burst.
		if st.seen != now && now.After(st.quietUntil) {
			delete(w.groups, k)
		}
	}
	w.checked, w.since, w.from, w.recent = true, time.Time{}, time.Time{}, nil
	return events
}

// observeVerdict takes a check's health verdict and returns its event, if
// it changed or gives a new reason; the first verdict is reported only
// when it is not OK. Observe takes the groups besides; taken alone, when the
// groups cannot be read (the database does not answer), the verdict leaves
// the groups as they were, so that none is new once they can be read
// again.
func (w *Watcher) observeVerdict(h ops.Health) []Event {
	e := Event{Type: EventHealthChanged, Status: h.Status, PreviousStatus: w.status}
	reasons := make(map[ops.ReasonKey]bool, len(h.Reasons))
	fresh := false
	for _, r := range h.Reasons {
		isNew := !w.reasons[r.Key()]
		fresh = fresh || isNew
		reasons[r.Key()] = true
		e.Reasons = append(e.Reasons, Reason{Status: r.Status, Code: r.Code, Queue: r.Queue, Message: r.Message, New: isNew})
	}
	var events []Event
	// The first verdict seen is reported only when it is not OK.
	if (h.Status != w.status || fresh) && (w.checked || w.status != "" || h.Status != ops.HealthOK) {
		events = append(events, e)
	}
	w.status, w.reasons = h.Status, reasons
	return events
}

// trim keeps the samples after from, and the newest one not after it: the
// count the growth is measured from.
func (st *groupState) trim(from time.Time) {
	i := 0
	for i+1 < len(st.samples) && !st.samples[i+1].at.After(from) {
		i++
	}
	st.samples = st.samples[i:]
}

// mergeByKey merges groups that look the same, as groups that differ only
// by a secret redacted from their pattern do: an alert speaks of what its
// reader sees.
func mergeByKey(groups []ops.DeadGroup) []ops.DeadGroup {
	out := make([]ops.DeadGroup, 0, len(groups))
	at := make(map[groupKey]int, len(groups))
	for _, g := range groups {
		i, ok := at[keyOf(g)]
		if !ok {
			at[keyOf(g)] = len(out)
			out = append(out, g)
			continue
		}
		m := &out[i]
		m.Count += g.Count
		if g.FirstDeadAt.Before(m.FirstDeadAt) {
			m.FirstDeadAt = g.FirstDeadAt
		}
		if g.LastDeadAt.After(m.LastDeadAt) {
			m.LastDeadAt, m.ErrorMessage, m.RetriesFromDLQ = g.LastDeadAt, g.ErrorMessage, g.RetriesFromDLQ
		}
	}
	return out
}

// reasonKeys are what tells the reasons of h apart.
func reasonKeys(h ops.Health) []ops.ReasonKey {
	keys := make([]ops.ReasonKey, 0, len(h.Reasons))
	for _, r := range h.Reasons {
		keys = append(keys, r.Key())
	}
	return keys
}

func keyOf(g ops.DeadGroup) groupKey {
	return groupKey{g.DLQ, g.SourceQueue, g.Kind, g.ErrorClass, g.ErrorPattern}
}

func groupOf(g ops.DeadGroup) *Group {
	return &Group{DLQ: g.DLQ, Queue: g.SourceQueue, Kind: g.Kind, ErrorClass: g.ErrorClass, ErrorPattern: g.ErrorPattern,
		Error: g.ErrorMessage, Count: g.Count, FirstDeadAt: g.FirstDeadAt, LastDeadAt: g.LastDeadAt, RetriesFromDLQ: g.RetriesFromDLQ}
}
