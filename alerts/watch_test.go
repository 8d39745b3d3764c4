package alerts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/alerts"
	"github.com/pgbus/pgbus/ops"
)

// The verdict is reported when it changes, once; the first check reports
// it only when it is not OK, and knows the groups there are already.
func TestWatcherReportsChanges(t *testing.T) {
	t.Parallel()
	w := alerts.NewWatcher(100, time.Minute)
	now := time.Now()
	old := ops.DLQSummary{Groups: []ops.DeadGroup{{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "c", Count: 7}}}
	degraded := ops.Health{Status: ops.HealthDegraded, Reasons: []ops.HealthReason{{Status: ops.HealthDegraded, Code: "queue_paused", Queue: "a", Message: "queue a is paused"}}}
	steps := []struct {
		h    ops.Health
		want []string
	}{
		{ops.Health{Status: ops.HealthOK}, nil},
		{ops.Health{Status: ops.HealthOK}, nil},
		{degraded, []string{alerts.EventHealthChanged}},
		{degraded, nil},
		{ops.Health{Status: ops.HealthStalled}, []string{alerts.EventHealthChanged}},
		{ops.Health{Status: ops.HealthOK}, []string{alerts.EventHealthChanged}},
	}
	for i, s := range steps {
		now = now.Add(time.Second)
		events := w.Observe(now, s.h, old)
		var got []string
		for _, e := range events {
			got = append(got, e.Type)
		}
		if len(got) != len(s.want) || (len(got) > 0 && got[0] != s.want[0]) {
			t.Fatalf("check %d (%s): events %v, want %v", i, s.h.Status, got, s.want)
		}
		if i == 2 && (events[0].PreviousStatus != ops.HealthOK || len(events[0].Reasons) != 1 || events[0].Reasons[0].Code != "queue_paused") {
			t.Fatalf("the change to DEGRADED: %+v", events[0])
		}
	}
	if e := alerts.NewWatcher(100, time.Minute).Observe(now, degraded, old); len(e) != 1 || e[0].Type != alerts.EventHealthChanged || e[0].PreviousStatus != "" {
		t.Fatalf("a first check on a DEGRADED system: %+v; want the verdict reported", e)
	}
}

// A new reason is reported while the verdict stays the same (a second
// queue STALLED, a queue paused while dead letters make it DEGRADED); a
// reason that lasts is reported once, and one that goes and comes back is
// reported again. A Watcher resuming from another's check knows the
// reasons that check saw.
func TestWatcherReportsNewReasonsUnderTheSameVerdict(t *testing.T) {
	t.Parallel()
	jobs := ops.HealthReason{Status: ops.HealthStalled, Code: "no_workers", Queue: "jobs", Message: "queue jobs: no worker"}
	q3 := ops.HealthReason{Status: ops.HealthStalled, Code: "no_workers", Queue: "q3", Message: "queue q3: no worker"}
	dead := ops.HealthReason{Status: ops.HealthDegraded, Code: "dead_letters_growing", Queue: "jobs", Message: "queue jobs: 3 dead-lettered"}
	paused := ops.HealthReason{Status: ops.HealthDegraded, Code: "queue_paused", Queue: "q3", Message: "queue q3 is paused"}
	health := func(status string, reasons ...ops.HealthReason) ops.Health {
		return ops.Health{Status: status, Reasons: reasons}
	}
	steps := []struct {
		h    ops.Health
		want string // the new reasons' queues and codes, "" for no event
	}{
		{health(ops.HealthOK), ""},
		{health(ops.HealthStalled, jobs), "jobs no_workers"},
		{health(ops.HealthStalled, jobs, q3), "q3 no_workers"},
		{health(ops.HealthStalled, jobs, q3), ""},
		{health(ops.HealthStalled, jobs), ""},
		{health(ops.HealthStalled, jobs, q3), "q3 no_workers"},
		{health(ops.HealthDegraded, dead), "jobs dead_letters_growing"},
		{health(ops.HealthDegraded, dead), ""},
		{health(ops.HealthDegraded, dead, paused), "q3 queue_paused"},
	}
	w := alerts.NewWatcher(100, time.Minute)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, s := range steps {
		now = now.Add(time.Second)
		events := w.Observe(now, s.h, ops.DLQSummary{})
		var got []string
		for _, e := range events {
			for _, r := range e.Reasons {
				if r.New {
					got = append(got, r.Queue+" "+r.Code)
				}
			}
		}
		if strings.Join(got, ", ") != s.want || (s.want == "") != (len(events) == 0) {
			t.Fatalf("check %d: events %+v; want the new reasons %q", i, events, s.want)
		}
	}
	// Under the same verdict the event says so, with the new reason marked
	// among those a person was told of before.
	w = alerts.NewWatcher(100, time.Minute)
	w.Observe(now, health(ops.HealthStalled, jobs), ops.DLQSummary{})
	events := w.Observe(now.Add(time.Second), health(ops.HealthStalled, jobs, q3), ops.DLQSummary{})
	if len(events) != 1 || events[0].Type != alerts.EventHealthChanged || events[0].PreviousStatus != ops.HealthStalled || len(events[0].Reasons) != 2 {
		t.Fatalf("a second queue STALLED: %+v; want one health_changed event, STALLED before and now, with both reasons", events)
	}
	if text := alerts.Text(events); text != "pgbus health is still STALLED, with a new reason\n  - queue jobs: no worker\n  - new: queue q3: no worker" {
		t.Fatalf("its text: %q", text)
	}

	// Resumed from a check that saw jobs STALLED, only q3 is new.
	w = alerts.NewWatcher(100, time.Minute)
	w.Resume(alerts.Handover{Last: now, Status: ops.HealthStalled, Reasons: []ops.ReasonKey{jobs.Key()}})
	events = w.Observe(now.Add(time.Minute), health(ops.HealthStalled, jobs, q3), ops.DLQSummary{})
	if len(events) != 1 || len(events[0].Reasons) != 2 || events[0].Reasons[0].New || !events[0].Reasons[1].New {
		t.Fatalf("resumed knowing jobs STALLED, with q3 STALLED too: %+v; want q3 alone new", events)
	}
}

// A Watcher that resumes from another's last check reports what changed
// since: the verdict against the one seen then, and the groups whose
// first message died after it as new, the older ones as known.
func TestWatcherResumes(t *testing.T) {
	t.Parallel()
	last := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	before := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "old", Count: 7, FirstDeadAt: last.Add(-time.Hour)}
	after := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "new", Count: 3, FirstDeadAt: last.Add(time.Minute)}
	sum := ops.DLQSummary{Groups: []ops.DeadGroup{before, after}}

	w := alerts.NewWatcher(100, time.Minute)
	w.Resume(alerts.Handover{Last: last, Status: ops.HealthOK})
	now := last.Add(5 * time.Minute)
	events := w.Observe(now, ops.Health{Status: ops.HealthDegraded}, sum)
	if len(events) != 2 || events[0].Type != alerts.EventHealthChanged || events[0].PreviousStatus != ops.HealthOK ||
		events[1].Type != alerts.EventGroupNew || events[1].Group.ErrorClass != "new" {
		t.Fatalf("the first check after resuming: %+v; want the verdict changed from OK and group new only", events)
	}
	// From then on it watches as any: a group that appears is new
	// whatever its first message's time.
	later := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "later", Count: 1, FirstDeadAt: last.Add(-2 * time.Hour)}
	sum.Groups = append(sum.Groups, later)
	events = w.Observe(now.Add(time.Second), ops.Health{Status: ops.HealthDegraded}, sum)
	if len(events) != 1 || events[0].Type != alerts.EventGroupNew || events[0].Group.ErrorClass != "later" {
		t.Fatalf("the next check: %+v; want group later new", events)
	}

	// Resumed from a check that saw the same verdict, nothing is reported
	// of it.
	w = alerts.NewWatcher(100, time.Minute)
	w.Resume(alerts.Handover{Last: last, Status: ops.HealthDegraded})
	if events := w.Observe(now, ops.Health{Status: ops.HealthDegraded}, ops.DLQSummary{Groups: []ops.DeadGroup{before}}); len(events) != 0 {
		t.Fatalf("resumed on the same verdict and known groups: %+v; want nothing", events)
	}
}

// A Watcher that resumes counts a known group's growth from its count at
// the handover (the messages dead since then taken off), so that what died
// while no Watcher looked is reported once it passes the threshold.
func TestWatcherResumedCountsGrowthWhileNoneLooked(t *testing.T) {
	t.Parallel()
	last := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	grew := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "grew", Count: 200, FirstDeadAt: last.Add(-time.Hour)}
	steady := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "steady", Count: 500, FirstDeadAt: last.Add(-time.Hour)}
	recentGrew, recentSteady := grew, steady
	recentGrew.Count, recentSteady.Count = 150, 99

	w := alerts.NewWatcher(100, 10*time.Minute)
	w.Resume(alerts.Handover{Last: last, Status: ops.HealthOK, From: last, Recent: []ops.DeadGroup{recentGrew, recentSteady}})
	now := last.Add(time.Minute)
	events := w.Observe(now, ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{grew, steady}})
	if len(events) != 1 || events[0].Type != alerts.EventGroupGrowing || events[0].Group.ErrorClass != "grew" || events[0].Growth != 150 {
		t.Fatalf("the first check after resuming: %+v; want group grew growing by 150, steady (99 more) not", events)
	}
	// The growth goes on being measured from the handover's count.
	steady.Count = 501
	events = w.Observe(now.Add(time.Minute), ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{grew, steady}})
	if len(events) != 1 || events[0].Group.ErrorClass != "steady" || events[0].Growth != 100 {
		t.Fatalf("the next check, steady one more: %+v; want steady growing by 100", events)
	}

	// Counts past what the check sees (messages retried between the two
	// reads; a group gone entirely): growth is at most what the group
	// holds, and a group gone says nothing.
	w = alerts.NewWatcher(100, 10*time.Minute)
	shrunk, gone := grew, steady
	shrunk.Count, gone.ErrorClass, gone.Count = 500, "gone", 1_000_000
	w.Resume(alerts.Handover{Last: last, Status: ops.HealthOK, From: last, Recent: []ops.DeadGroup{shrunk, gone}})
	events = w.Observe(now, ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{grew}})
	if len(events) != 1 || events[0].Group.ErrorClass != "grew" || events[0].Growth != grew.Count {
		t.Fatalf("resumed with counts larger than the groups: %+v; want grew growing by the %d it holds", events, grew.Count)
	}

	// Without counts, growth counts from the first check, as before.
	w = alerts.NewWatcher(100, 10*time.Minute)
	w.Resume(alerts.Handover{Last: last, Status: ops.HealthOK})
	if events := w.Observe(now, ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{grew}}); len(events) != 0 {
		t.Fatalf("resumed without counts: %+v; want nothing", events)
	}
}

// Groups that look the same (they differ only by a secret redacted from
// their pattern) are watched as one: their counts add up, and the growth
// of both together is what passes the threshold.
func TestWatcherMergesGroupsThatLookTheSame(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "http.400", ErrorPattern: `login failed: {<str>:<str>}`, Count: 10, FirstDeadAt: now.Add(-time.Hour)}
	b := a
	b.Count = 20
	w := alerts.NewWatcher(100, 10*time.Minute)
	if events := w.Observe(now, ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{a, b}}); len(events) != 0 {
		t.Fatalf("the baseline: %+v", events)
	}
	a.Count, b.Count = 70, 70 // 110 more together, 60 and 50 each
	events := w.Observe(now.Add(time.Minute), ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{a, b}})
	if len(events) != 1 || events[0].Type != alerts.EventGroupGrowing || events[0].Growth != 110 || events[0].Group.Count != 140 {
		t.Fatalf("two groups that look the same grew by 60 and 50: %+v; want one growing by 110 to 140", events)
	}
}

// What a group gains while it is quiet after an alert is reported when the
// quiet ends, however late the first check after it comes: a burst that
// goes on right after its first alert is not forgotten for having ended
// more than a window before that check. That check measures from the
// alert once: if the growth since falls short, later checks measure over
// the window again.
func TestWatcherReportsWhatGrewWhileQuiet(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	group := func(count int64) ops.DLQSummary {
		return ops.DLQSummary{Groups: []ops.DeadGroup{{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "c", Count: count, FirstDeadAt: start.Add(time.Second)}}}
	}
	ok := ops.Health{Status: ops.HealthOK}
	observe := func(w *alerts.Watcher, at time.Duration, count int64) []alerts.Event {
		return w.Observe(start.Add(at), ok, group(count))
	}
	w := alerts.NewWatcher(50, time.Minute)
	w.Observe(start, ok, ops.DLQSummary{})
	if e := observe(w, 2*time.Second, 10); len(e) != 1 || e[0].Type != alerts.EventGroupNew {
		t.Fatalf("the group's first check: %+v; want it new", e)
	}
	// 60 more die right after the alert; checks go on each second, quiet.
	for s := 3; s <= 61; s++ {
		if e := observe(w, time.Duration(s)*time.Second, 70); len(e) != 0 {
			t.Fatalf("check at %ds, within the quiet minute: %+v", s, e)
		}
	}
	// The first check after the quiet minute comes late: the 60 died more
	// than a minute before it.
	e := observe(w, 70*time.Second, 70)
	if len(e) != 1 || e[0].Type != alerts.EventGroupGrowing || e[0].Growth != 60 || e[0].Group.Count != 70 {
		t.Fatalf("the first check after the quiet minute: %+v; want the group growing by the 60 it gained since its alert", e)
	}

	// 30 while quiet and 30 after is 60 since the alert, but never 50
	// within one minute: nothing is reported.
	w = alerts.NewWatcher(50, time.Minute)
	w.Observe(start, ok, ops.DLQSummary{})
	observe(w, 2*time.Second, 10)
	for s := 3; s <= 61; s++ {
		observe(w, time.Duration(s)*time.Second, 40)
	}
	if e := observe(w, 62*time.Second, 40); len(e) != 0 {
		t.Fatalf("30 since the alert: %+v; want nothing", e)
	}
	for s := 63; s <= 130; s++ {
		if e := observe(w, time.Duration(s)*time.Second, 40+int64(s-62)/3); len(e) != 0 {
			t.Fatalf("check at %ds, growing by one in 3 s: %+v; want nothing", s, e)
		}
	}
}

// A group that comes back after a retry (its messages retried out of the
// DLQ died again) is a new group whose alert says so, by its newest
// message; of two groups that look the same, the newer one's count is
// the one said.
func TestNewGroupThatCameBackSaysSo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w := alerts.NewWatcher(100, 10*time.Minute)
	if events := w.Observe(now, ops.Health{Status: ops.HealthOK}, ops.DLQSummary{}); len(events) != 0 {
		t.Fatalf("the baseline: %+v", events)
	}
	older := ops.DeadGroup{DLQ: "a_dlq", SourceQueue: "a", Kind: "k", ErrorClass: "http.503", Count: 2, LastDeadAt: now, RetriesFromDLQ: 1}
	newer := older
	newer.LastDeadAt, newer.RetriesFromDLQ = now.Add(time.Second), 2
	events := w.Observe(now.Add(time.Minute), ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{older, newer}})
	if len(events) != 1 || events[0].Type != alerts.EventGroupNew || events[0].Group.RetriesFromDLQ != 2 {
		t.Fatalf("a group that came back: %+v; want it new, with the newest message's 2 retries", events)
	}
	if text := alerts.Text(events); !strings.Contains(text, "it came back: its newest message died again after 2 DLQ retries") {
		t.Errorf("alert text %q; want it to say the group came back", text)
	}
	fresh := ops.DeadGroup{DLQ: "b_dlq", SourceQueue: "b", Kind: "k", Count: 1, LastDeadAt: now}
	if text := alerts.Text(w.Observe(now.Add(2*time.Minute), ops.Health{Status: ops.HealthOK}, ops.DLQSummary{Groups: []ops.DeadGroup{older, newer, fresh}})); strings.Contains(text, "came back") {
		t.Errorf("alert text of a group that died once: %q; want no comeback", text)
	}
}
