package ops

import (
	"time"

	"github.com/pgbus/pgbus/store"
)

// QueueStats is what an operator or agent wants to know about one queue.
// TotalSent is exact for a role that may read the queue's id sequence, and
// a lower bound for one that may only read its tables.
type QueueStats struct {
	Queue string `json:"queue" jsonschema_description:"Logical queue name"`
	// Depth splits into Visible + InFlight + WaitingRetry + Scheduled.
	Depth        int64 `json:"depth" jsonschema_description:"Messages in the queue"`
	Visible      int64 `json:"visible" jsonschema_description:"Ready to run now"`
	InFlight     int64 `json:"in_flight" jsonschema_description:"Held by a worker right now"`
	WaitingRetry int64 `json:"waiting_retry" jsonschema_description:"Failed and waiting for their next attempt"`
	Scheduled    int64 `json:"scheduled" jsonschema_description:"Sent with a delay or snoozed and not yet due"`
	// Ages in seconds; 0 when there is no such message.
	OldestAgeSeconds        float64  `json:"oldest_age_seconds" jsonschema_description:"Age of the oldest message in the queue"`
	OldestVisibleAgeSeconds float64  `json:"oldest_visible_age_seconds" jsonschema_description:"Age of the oldest message ready to run: a growing value means the backlog is not draining"`
	DLQ                     string   `json:"dlq" jsonschema_description:"The queue's dead-letter queue"`
	DLQDepth                int64    `json:"dlq_depth" jsonschema_description:"Dead messages waiting in the DLQ"`
	Archived                int64    `json:"archived" jsonschema_description:"Messages in the queue's archive"`
	TotalSent               int64    `json:"total_sent" jsonschema_description:"Messages ever sent to the queue"`
	LastHour                Counters `json:"last_hour" jsonschema_description:"Outcomes over the last 60 minutes"`
	ThroughputPerMinute     float64  `json:"throughput_per_minute" jsonschema_description:"Jobs settled (succeeded, dead-lettered or discarded) per minute, averaged over the last 5 minutes"`
	// Latency percentiles are the upper bounds of histogram buckets (powers
	// of two in milliseconds); absent without data in the last hour.
	LatencyP50MS *float64      `json:"latency_p50_ms,omitempty" jsonschema_description:"Median enqueue-to-start latency over the last hour (bucket upper bound)"`
	LatencyP95MS *float64      `json:"latency_p95_ms,omitempty" jsonschema_description:"95th percentile enqueue-to-start latency over the last hour (bucket upper bound)"`
	Paused       bool          `json:"paused"`
	Settings     RetrySettings `json:"settings"`
}

// Counters are outcome counts over a window.
type Counters struct {
	Succeeded    int64 `json:"succeeded"`
	Failed       int64 `json:"failed"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
	Discarded    int64 `json:"discarded"`
}

// RetrySettings are a queue's settings in plain units, for people and agents.
type RetrySettings struct {
	MaxRetries               int     `json:"max_retries"`
	VisibilityTimeoutSeconds float64 `json:"visibility_timeout_seconds"`
	BackoffStrategy          string  `json:"backoff_strategy" jsonschema:"enum=exponential,enum=polynomial"`
	RetryBackoffSeconds      float64 `json:"retry_backoff_seconds"`
	RetryBackoffMaxSeconds   float64 `json:"retry_backoff_max_seconds"`
	RetryBackoffJitter       float64 `json:"retry_backoff_jitter"`
	OnSuccess                string  `json:"on_success" jsonschema:"enum=archive,enum=delete"`
	DeadlineSeconds          float64 `json:"deadline_seconds" jsonschema_description:"Messages older than this are dead-lettered with deadline_exceeded; 0 for none"`
	ArchiveRetentionSeconds  float64 `json:"archive_retention_seconds"`
	DeadRetentionSeconds     float64 `json:"dead_retention_seconds"`
}

// BreakerState is a circuit breaker shared by all workers.
type BreakerState struct {
	Name                  string     `json:"name"`
	State                 string     `json:"state" jsonschema:"enum=closed,enum=open,enum=half_open"`
	ConsecutiveFailures   int        `json:"consecutive_failures"`
	FailureThreshold      int        `json:"failure_threshold"`
	CoolOffSeconds        float64    `json:"cool_off_seconds"`
	CurrentCoolOffSeconds float64    `json:"current_cool_off_seconds"`
	MaxCoolOffSeconds     float64    `json:"max_cool_off_seconds"`
	OpenedAt              *time.Time `json:"opened_at,omitempty"`
	OpenUntil             *time.Time `json:"open_until,omitempty"`
	LastError             string     `json:"last_error,omitempty" jsonschema_description:"The last failure's message, secrets redacted."`
	UpdatedAt             time.Time  `json:"updated_at"`
}

// WorkerProcess is a worker process as it registered itself.
type WorkerProcess struct {
	ID          string     `json:"id"`
	Hostname    string     `json:"hostname"`
	PID         int        `json:"pid"`
	Queues      []string   `json:"queues"`
	Concurrency int        `json:"concurrency"`
	StartedAt   time.Time  `json:"started_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	StoppedAt   *time.Time `json:"stopped_at,omitempty"`
}

// queueStats converts the store's stats; the field sets are the same.
func queueStats(q store.QueueStats) QueueStats {
	return QueueStats{
		Queue: q.Queue, Depth: q.Depth, Visible: q.Visible, InFlight: q.InFlight, WaitingRetry: q.WaitingRetry, Scheduled: q.Scheduled,
		OldestAgeSeconds: q.OldestAgeSeconds, OldestVisibleAgeSeconds: q.OldestVisibleAgeSeconds, DLQ: q.DLQ, DLQDepth: q.DLQDepth,
		Archived: q.Archived, TotalSent: q.TotalSent, LastHour: Counters(q.LastHour), ThroughputPerMinute: q.ThroughputPerMinute,
		LatencyP50MS: q.LatencyP50MS, LatencyP95MS: q.LatencyP95MS, Paused: q.Paused, Settings: RetrySettings(q.Settings),
	}
}

func queueStatsList(in []store.QueueStats) []QueueStats {
	out := make([]QueueStats, len(in))
	for i, q := range in {
		out[i] = queueStats(q)
	}
	return out
}
