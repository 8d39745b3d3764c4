package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Admin is the operator's and agent's view of pgbus: queue stats, health,
// workers, live messages, pause and resume, and the audit log. The MCP tools
// and the CLI both call it.
type Admin struct {
	store *store.Store
	// StaleAfter is how old a worker's heartbeat may be before the worker
	// counts as stale (crashed or hung). Default 30s: three missed beats.
	StaleAfter time.Duration
	// StallAfter is how long the oldest ready message may wait, with nothing
	// settled meanwhile, before a queue counts as stalled. Default 5m.
	StallAfter time.Duration
}

// NewAdmin returns an Admin over a migrated store.
func NewAdmin(s *store.Store) *Admin {
	return &Admin{store: s, StaleAfter: 30 * time.Second, StallAfter: 5 * time.Minute}
}

// QueueStats returns the stats of one queue, or of all when queue is "".
func (a *Admin) QueueStats(ctx context.Context, queue string) ([]store.QueueStats, error) {
	return a.store.QueueStats(ctx, queue)
}

// QueueMessages lists the live messages of a queue with their failures.
func (a *Admin) QueueMessages(ctx context.Context, f store.LiveFilter, cursor string, limit int) (store.LivePage, error) {
	if limit == 0 {
		limit = 25
	}
	return a.store.ListLive(ctx, f, cursor, limit)
}

// Pause stops workers from reading a queue; it reports whether that changed
// anything. Messages already running finish.
func (a *Admin) Pause(ctx context.Context, queue string) (bool, error) {
	return a.store.SetPaused(ctx, queue, true)
}

// Resume lets workers read a paused queue again.
func (a *Admin) Resume(ctx context.Context, queue string) (bool, error) {
	return a.store.SetPaused(ctx, queue, false)
}

// RecordAudit records a write operation.
func (a *Admin) RecordAudit(ctx context.Context, e store.AuditEntry) error {
	return a.store.RecordAudit(ctx, e)
}

// Audit lists recorded write operations, newest first.
func (a *Admin) Audit(ctx context.Context, f store.AuditFilter, cursor string, limit int) (store.AuditPage, error) {
	if limit == 0 {
		limit = 25
	}
	return a.store.ListAudit(ctx, f, cursor, limit)
}

// Worker states of WorkerStatus.
const (
	WorkerRunning = "running"
	WorkerStale   = "stale"
	WorkerStopped = "stopped"
)

// WorkerStatus is a worker process and what its heartbeat says of it.
type WorkerStatus struct {
	store.WorkerProcess
	Status string `json:"status" jsonschema:"enum=running,enum=stale,enum=stopped"`
	// HeartbeatAgeSeconds is how long ago the process last checked in.
	HeartbeatAgeSeconds float64 `json:"heartbeat_age_seconds"`
}

// Workers lists worker processes seen in the last 24 hours, newest first.
func (a *Admin) Workers(ctx context.Context) ([]WorkerStatus, error) {
	ws, err := a.store.ListWorkers(ctx, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	out := make([]WorkerStatus, len(ws))
	for i, w := range ws {
		age := time.Since(w.HeartbeatAt)
		status := WorkerRunning
		switch {
		case w.StoppedAt != nil:
			status = WorkerStopped
		case age > a.StaleAfter:
			status = WorkerStale
		}
		out[i] = WorkerStatus{WorkerProcess: w, Status: status, HeartbeatAgeSeconds: age.Seconds()}
	}
	return out, nil
}

// Health statuses, from best to worst.
const (
	HealthOK       = "OK"
	HealthDegraded = "DEGRADED"
	HealthStalled  = "STALLED"
)

// Health is a one-look summary of the whole system.
type Health struct {
	Status       string         `json:"status" jsonschema:"enum=OK,enum=DEGRADED,enum=STALLED"`
	Reasons      []HealthReason `json:"reasons"`
	Queues       int            `json:"queues"`
	Backlog      int64          `json:"backlog" jsonschema_description:"Messages ready to run across all queues"`
	DeadMessages int64          `json:"dead_messages" jsonschema_description:"Messages waiting in dead-letter queues"`
	Workers      int            `json:"workers_running"`
	CheckedAt    time.Time      `json:"checked_at"`
}

// HealthReason explains one thing that is not OK and what to look at next.
type HealthReason struct {
	Status  string `json:"status" jsonschema:"enum=DEGRADED,enum=STALLED"`
	Code    string `json:"code" jsonschema:"enum=backlog_not_draining,enum=backlog_growing_old,enum=no_running_workers,enum=stale_workers,enum=dead_letters_growing,enum=queue_paused"`
	Queue   string `json:"queue,omitempty"`
	Message string `json:"message"`
}

// Health checks queues and workers: STALLED when ready work is not being
// done, DEGRADED when something needs a look (stale workers, new dead
// letters, paused queues, an aging backlog), OK otherwise.
func (a *Admin) Health(ctx context.Context) (Health, error) {
	h := Health{Status: HealthOK, Reasons: []HealthReason{}, CheckedAt: time.Now().UTC()}
	stats, err := a.store.QueueStats(ctx, "")
	if err != nil {
		return h, err
	}
	workers, err := a.Workers(ctx)
	if err != nil {
		return h, err
	}
	stale := 0
	for _, w := range workers {
		switch w.Status {
		case WorkerRunning:
			h.Workers++
		case WorkerStale:
			stale++
		}
	}
	if stale > 0 {
		h.add(HealthDegraded, "stale_workers", "", fmt.Sprintf("%d worker process(es) stopped sending heartbeats without shutting down (crashed or hung); their messages return after their visibility timeout: see pgbus_workers", stale))
	}
	h.Queues = len(stats)
	for _, q := range stats {
		h.Backlog += q.Visible
		h.DeadMessages += q.DLQDepth
		a.checkQueue(&h, q)
	}
	return h, nil
}

func (a *Admin) checkQueue(h *Health, q store.QueueStats) {
	oldest := time.Duration(q.OldestVisibleAgeSeconds * float64(time.Second))
	switch {
	case q.Paused:
		h.add(HealthDegraded, "queue_paused", q.Queue, fmt.Sprintf("queue %q is paused with %d messages waiting; resume it with pgbus_queue_resume when the cause is fixed", q.Queue, q.Depth))
	case q.Visible > 0 && h.Workers == 0:
		h.add(HealthStalled, "no_running_workers", q.Queue, fmt.Sprintf("queue %q has %d messages ready and no worker process is running: start pgbus work or pgbus serve", q.Queue, q.Visible))
	case q.Visible > 0 && oldest > a.StallAfter && q.ThroughputPerMinute == 0:
		h.add(HealthStalled, "backlog_not_draining", q.Queue, fmt.Sprintf("queue %q: the oldest ready message has waited %s and nothing settled in 5 minutes; check pgbus_workers and pgbus_queue_messages", q.Queue, oldest.Round(time.Second)))
	case q.Visible > 0 && oldest > time.Minute:
		h.add(HealthDegraded, "backlog_growing_old", q.Queue, fmt.Sprintf("queue %q: the oldest ready message has waited %s; workers are behind (see pgbus_queue_stats)", q.Queue, oldest.Round(time.Second)))
	}
	if q.LastHour.DeadLettered > 0 {
		h.add(HealthDegraded, "dead_letters_growing", q.Queue, fmt.Sprintf("queue %q: %d messages dead-lettered in the last hour (%d in its DLQ); see pgbus_dlq_summary", q.Queue, q.LastHour.DeadLettered, q.DLQDepth))
	}
}

func (h *Health) add(status, code, queue, msg string) {
	h.Reasons = append(h.Reasons, HealthReason{Status: status, Code: code, Queue: queue, Message: msg})
	if status == HealthStalled || h.Status == HealthOK {
		h.Status = status
	}
}

// Circuits lists the circuit breakers and their states.
func (a *Admin) Circuits(ctx context.Context) ([]store.BreakerState, error) {
	return a.store.ListBreakers(ctx)
}

// ResetCircuit closes a circuit breaker by hand, for when its downstream is
// known to be back.
func (a *Admin) ResetCircuit(ctx context.Context, name string) error {
	return a.store.ResetBreaker(ctx, name)
}
