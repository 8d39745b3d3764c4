package ops

import (
	"slices"
	"time"

	"github.com/pgbus/pgbus/store"
)

// QueueStats is what an operator or agent wants to know about one queue.
// TotalSent, read from the queue's id sequence by a role that may,
// counts every id taken since the sequence's start, that is since the
// queue was created (a queue made again under a dropped one's name starts
// it after the ids the name had, and counts its own messages alone):
// those of sends and retries into the queue that failed too, and after a
// crash, or on a standby, up to 32 more a queue, which PostgreSQL logs
// ahead for its sequences. It is a lower bound for a role that may only
// read the tables.
type QueueStats struct {
	Queue string `json:"queue" jsonschema_description:"Logical queue name"`
	// Depth splits into Visible + InFlight + WaitingRetry + Scheduled.
	Depth        int64 `json:"depth" jsonschema_description:"Messages in the queue"`
	Visible      int64 `json:"visible" jsonschema_description:"Ready to run now"`
	InFlight     int64 `json:"in_flight" jsonschema_description:"Held by a worker right now"`
	WaitingRetry int64 `json:"waiting_retry" jsonschema_description:"Failed and waiting for their next attempt"`
	Scheduled    int64 `json:"scheduled" jsonschema_description:"Not yet due: sent with a delay, snoozed (a circuit breaker was open), or given back by a stopped worker while its handler ignored the stop (visible again after the visibility timeout, the attempt not counted; one whose handler returned is visible at once, counted in visible)"`
	// Ages in seconds; 0 when there is no such message.
	OldestAgeSeconds        float64 `json:"oldest_age_seconds" jsonschema_description:"Seconds since the oldest message in the queue was sent; 0 when the queue is empty"`
	OldestVisibleAgeSeconds float64 `json:"oldest_visible_age_seconds" jsonschema_description:"Seconds the message ready longest has been ready to run (since it was sent, or since its delay or retry backoff ended); 0 when none is ready. A growing value means the backlog is not draining"`
	DLQ                     string  `json:"dlq" jsonschema_description:"The queue's dead-letter queue"`
	DLQDepth                int64   `json:"dlq_depth" jsonschema_description:"Dead messages waiting in the DLQ"`
	// DLQMissing marks a queue whose DLQ's table alone is gone, dropped
	// outside pgbus, as health's queue_tables_missing names it.
	DLQMissing bool `json:"dlq_missing,omitempty" jsonschema_description:"True when the DLQ's table is gone, dropped outside pgbus: dlq_depth reads 0, and messages that fail their last attempt stay in the queue until creating the queue again makes the DLQ"`
	// Dropped marks a queue whose tables are gone while its DLQ holds
	// messages: only its DLQ and recent counters are read.
	Dropped bool `json:"dropped,omitempty" jsonschema_description:"True for a queue that was dropped (by PGMQ's drop_queue, or by hand) while its DLQ still holds dead messages: only dlq, dlq_depth and last_hour are read, and settings are those it gets when created again. Its dead messages can be listed, and discarded or purged; to retry them, create the queue again"`
	// Priorities is the number of the queue's priority levels.
	Priorities          int      `json:"priorities,omitempty" jsonschema_description:"The queue's priority levels (sub-queues NAME_p0, NAME_p1, ...; p0 is worked first); absent for a queue without"`
	CountsEstimated     bool     `json:"counts_estimated,omitempty" jsonschema_description:"True when the queue's table holds more than 1,000,000 messages or 32 MB, too many to count at each read: depth and visible then come from the database's statistics, which follow sends and deletes within seconds. in_flight, waiting_retry, scheduled and the ages stay exact; absent when the counts are exact"`
	Archived            int64    `json:"archived" jsonschema_description:"Messages in the queue's archive"`
	ArchivedEstimated   bool     `json:"archived_estimated,omitempty" jsonschema_description:"True when archived comes from the database's statistics: the archive holds more than 100,000 messages, or takes more than 4,096 pages (32 MB)"`
	TotalSent           int64    `json:"total_sent" jsonschema_description:"Messages sent to the queue since it was created: a queue dropped and created again counts from then, not the messages of the queue of that name before"`
	LastHour            Counters `json:"last_hour" jsonschema_description:"Outcomes over the last 60 minutes"`
	ThroughputPerMinute float64  `json:"throughput_per_minute" jsonschema_description:"Jobs settled (succeeded, dead-lettered or discarded) per minute, averaged over the last 5 minutes"`
	// Latency percentiles are the upper bounds of histogram buckets (powers
	// of two in milliseconds); absent without data in the last hour.
	LatencyP50MS *float64      `json:"latency_p50_ms,omitempty" jsonschema_description:"Median enqueue-to-start latency in milliseconds over the last hour: how long a message waited from becoming ready (sent, or due after a delay or retry) until a worker started it. The upper bound of a power-of-two bucket, so 4096 means between 2048 and 4096 ms; absent without jobs in the last hour"`
	LatencyP95MS *float64      `json:"latency_p95_ms,omitempty" jsonschema_description:"95th percentile enqueue-to-start latency in milliseconds over the last hour: how long a message waited from becoming ready until a worker started it. The upper bound of a power-of-two bucket; absent without jobs in the last hour"`
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
	MaxRetries               int     `json:"max_retries" jsonschema_description:"Attempts a message gets before it is dead-lettered with max_retries_exceeded"`
	VisibilityTimeoutSeconds float64 `json:"visibility_timeout_seconds" jsonschema_description:"Seconds a message stays invisible once a worker reads it (heartbeats extend it); the default time limit of a handler without its own timeout"`
	BackoffStrategy          string  `json:"backoff_strategy" jsonschema:"enum=exponential,enum=polynomial"`
	RetryBackoffSeconds      float64 `json:"retry_backoff_seconds" jsonschema_description:"Seconds before the first retry (exponential: doubled for each later one)"`
	RetryBackoffMaxSeconds   float64 `json:"retry_backoff_max_seconds" jsonschema_description:"Seconds a wait between attempts may grow to at most"`
	RetryBackoffJitter       float64 `json:"retry_backoff_jitter" jsonschema_description:"Fraction (0 to 1) by which each wait is varied at random, such as 0.15 for ±15%"`
	OnSuccess                string  `json:"on_success" jsonschema:"enum=archive,enum=delete"`
	DeadlineSeconds          float64 `json:"deadline_seconds" jsonschema_description:"Seconds after it was sent that a message is dead-lettered with deadline_exceeded; 0 for none"`
	ArchiveRetentionSeconds  float64 `json:"archive_retention_seconds" jsonschema_description:"Seconds archived (succeeded or discarded) messages are kept before they are pruned"`
	DeadRetentionSeconds     float64 `json:"dead_retention_seconds" jsonschema_description:"Seconds dead messages discarded to the DLQ's archive are kept before they are pruned"`
}

// BreakerState is a circuit breaker shared by all workers.
type BreakerState struct {
	Name                  string        `json:"name"`
	State                 string        `json:"state" jsonschema:"enum=closed,enum=open,enum=half_open"`
	ConsecutiveFailures   int           `json:"consecutive_failures"`
	FailureThreshold      int           `json:"failure_threshold" jsonschema_description:"Consecutive failures that open the breaker."`
	CoolOffSeconds        float64       `json:"cool_off_seconds" jsonschema_description:"Seconds the breaker stays open the first time before one probe call goes through."`
	CurrentCoolOffSeconds float64       `json:"current_cool_off_seconds" jsonschema_description:"Seconds of the next (or current) open period: the cool-off doubled after each failed probe."`
	MaxCoolOffSeconds     float64       `json:"max_cool_off_seconds" jsonschema_description:"Seconds the open period may grow to at most."`
	OpenedAt              *time.Time    `json:"opened_at,omitempty"`
	OpenUntil             *time.Time    `json:"open_until,omitempty" jsonschema_description:"When the probe call may go through."`
	ProbeDue              bool          `json:"probe_due,omitempty" jsonschema_description:"The breaker is open and its cool-off is over: the next job that meets it makes the probe call. Jobs still wait for that job."`
	LastError             string        `json:"last_error,omitempty" jsonschema_description:"The last failure's message, secrets redacted."`
	LastSuccessAt         *time.Time    `json:"last_success_at,omitempty" jsonschema_description:"The last successful call through the breaker, to within a second; absent when none was recorded."`
	LastFailureAt         *time.Time    `json:"last_failure_at,omitempty" jsonschema_description:"The last failed call counted by the breaker; absent when none was recorded."`
	OpenedByHand          *HandOpening  `json:"opened_by_hand,omitempty" jsonschema_description:"Set while an opening by hand (pgbus_circuit_open) lasts: a person's maintenance window, so reset it only when asked."`
	RateLimited           *RateLimited  `json:"rate_limited,omitempty" jsonschema_description:"Set while the breaker is not closed and its last failure was the downstream limiting its rate or concurrency (429, or 503 with a Retry-After): the setting that bounds the requests in flight, which keeps the breaker from opening again each time it closes and releases the jobs it held."`
	Held                  int64         `json:"held" jsonschema_description:"Jobs the breaker holds: snoozed while it was open, they wait in its users' queues; a reset releases them now. A breaker that closed may still hold some: those it releases over its cool-off."`
	Users                 []BreakerUser `json:"users" jsonschema_description:"The queues and kinds whose handlers use the breaker, as worker processes registered them; for an agent at most 20, the latest seen."`
	UsersOmitted          int           `json:"users_omitted,omitempty" jsonschema_description:"Users left out of users, seen longest ago."`
	UpdatedAt             time.Time     `json:"updated_at"`
}

// trimUsers keeps the max users seen latest, in their order.
func (b *BreakerState) trimUsers(max int) {
	if len(b.Users) <= max {
		return
	}
	order := make([]int, len(b.Users))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return b.Users[y].SeenAt.Compare(b.Users[x].SeenAt) })
	keep := order[:max]
	slices.Sort(keep)
	kept := make([]BreakerUser, len(keep))
	for i, k := range keep {
		kept[i] = b.Users[k]
	}
	b.UsersOmitted = len(b.Users) - max
	b.Users = kept
}

// BreakerUser is a queue and kind whose handler uses a breaker, as a
// worker process said in the last 24 hours.
type BreakerUser struct {
	Queue  string    `json:"queue"`
	Kind   string    `json:"kind,omitempty" jsonschema_description:"The kind; absent for the queue's default handler, which runs every kind without a handler of its own."`
	SeenAt time.Time `json:"seen_at" jsonschema_description:"When a worker process last said it runs this handler: at its start, then at least hourly while it runs. Users not seen for 24 hours are not listed."`
}

// breakerState is b as the operations layer shows it at now.
func breakerState(b store.BreakerState, now time.Time) BreakerState {
	out := BreakerState{Name: b.Name, State: b.State, ConsecutiveFailures: b.ConsecutiveFailures, FailureThreshold: b.FailureThreshold,
		CoolOffSeconds: b.CoolOffSeconds, CurrentCoolOffSeconds: b.CurrentCoolOffSeconds, MaxCoolOffSeconds: b.MaxCoolOffSeconds,
		OpenedAt: b.OpenedAt, OpenUntil: b.OpenUntil, LastSuccessAt: b.LastSuccessAt, LastFailureAt: b.LastFailureAt,
		ProbeDue: probeDue(b, now), OpenedByHand: handOpeningOf(b, now), Users: make([]BreakerUser, len(b.Users)), UpdatedAt: b.UpdatedAt}
	out.LastError, _ = RedactText(b.LastError)
	out.RateLimited = rateLimitedOf(b)
	for i, u := range b.Users {
		out.Users[i] = BreakerUser(u)
	}
	return out
}

// RateLimited is a breaker whose last failure was its downstream limiting
// its rate or concurrency: a 429 Too Many Requests, or a 429 or 503 with a
// Retry-After asking it to slow down. Such a breaker cycles: once a probe
// succeeds, the jobs it held are released over its cool-off (or that
// Retry-After's wait), but while more run at once than the downstream
// takes it refuses them again within seconds. Bounding the requests in
// flight (Setting, set where Where says) lets the jobs through at the pace
// the downstream takes.
type RateLimited struct {
	Status            int     `json:"status" jsonschema_description:"The HTTP status of the last failure: 429 or 503."`
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty" jsonschema_description:"The wait its Retry-After asked for; absent when it gave none."`
	Setting           string  `json:"setting" jsonschema_description:"The handler option that bounds the requests in flight to the downstream: max_concurrency."`
	Where             string  `json:"where" jsonschema_description:"Where the setting goes, and what it bounds."`
}

// rateLimitedOf is b's RateLimited, nil when b is closed or its last
// failure was no downstream limiting its rate.
func rateLimitedOf(b store.BreakerState) *RateLimited {
	if b.State == store.BreakerClosed {
		return nil
	}
	out := &RateLimited{Setting: "max_concurrency", RetryAfterSeconds: float64(b.LastRetryAfterMs) / 1000,
		Where: "the options of the http handler of each queue that uses the breaker; it bounds the requests in flight from one worker process's handler, so the downstream sees its sum over those queues and the worker processes serving them: keep that sum within what the downstream allows"}
	switch {
	case b.LastErrorClass == "http.429":
		out.Status = 429
	case b.LastErrorClass == "http.503" && b.LastRetryAfterMs > 0:
		out.Status = 503
	default:
		return nil
	}
	return out
}

// probeDue says whether b is open with its cool-off over, so that the
// next job that meets it makes the probe call.
func probeDue(b store.BreakerState, now time.Time) bool {
	return b.State == store.BreakerOpen && b.OpenUntil != nil && !b.OpenUntil.After(now)
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
	System      string     `json:"system,omitempty" jsonschema:"enum=ruby_pgbus" jsonschema_description:"ruby_pgbus for a process of the Ruby gem pgbus, read from its pgbus_processes table; absent for pgbus's own."`
	Kind        string     `json:"kind,omitempty" jsonschema_description:"What a Ruby pgbus process is: worker, supervisor, ..."`
	Version     string     `json:"version,omitempty" jsonschema_description:"The pgbus the process runs, as it registered (pgbus VERSION commit HASH); absent for a process of an older pgbus or of the Ruby gem."`
	// StopError is why the process stopped, when it stopped on an error,
	// redacted; health reports it (workers_stopped on its queues), and
	// Workers lists it cut to WorkerStopErrorMax characters.
	StopError string `json:"stop_error,omitempty" jsonschema_description:"Why the process stopped, when it stopped on an error (its start refused, say): the error's text, redacted, cut to 500 characters; absent for a clean stop."`
	// StuckCount counts the handlers a running process gave up on for
	// ignoring their context that still run; StuckHandlers lists the
	// oldest (health reports them: handlers_stuck).
	StuckCount    int            `json:"stuck_count,omitempty" jsonschema_description:"Handlers the running process gave up on for ignoring their context past their timeout and grace, still running: their messages stay hidden, and their slots taken, until they return."`
	StuckHandlers []StuckHandler `json:"stuck_handlers,omitempty" jsonschema_description:"The oldest of those handlers, at most 20."`
}

// StuckHandler is a handler a worker process gave up on for ignoring its
// context, still running.
type StuckHandler struct {
	Queue string `json:"queue"`
	MsgID int64  `json:"msg_id"`
	Kind  string `json:"kind"`
	// StuckSeconds is how long ago the process gave up on it, on the
	// database's clock.
	StuckSeconds float64 `json:"stuck_seconds" jsonschema_description:"Seconds since the process gave up on the handler."`
}

// workerProcess converts the store's process; its age on the database's
// clock goes to WorkerStatus.
func workerProcess(w store.WorkerProcess) WorkerProcess {
	return WorkerProcess{
		ID: w.ID, Hostname: w.Hostname, PID: w.PID, Queues: w.Queues, Concurrency: w.Concurrency,
		StartedAt: w.StartedAt, HeartbeatAt: w.HeartbeatAt, StoppedAt: w.StoppedAt, System: w.System, Kind: w.Kind,
		Version: w.Version, StopError: w.StopError, StuckCount: w.StuckCount, StuckHandlers: stuckHandlers(w),
	}
}

// stuckHandlers converts w's stuck handlers, timed on the database's
// clock: the process's estimate of it when it gave up on each, and its
// heartbeat, which the database stamped.
func stuckHandlers(w store.WorkerProcess) []StuckHandler {
	out := make([]StuckHandler, 0, len(w.StuckHandlers))
	for _, h := range w.StuckHandlers {
		stuck := max(w.HeartbeatAt.Sub(h.GivenUpAt)+w.HeartbeatAge, 0)
		out = append(out, StuckHandler{Queue: h.Queue, MsgID: h.MsgID, Kind: h.Kind, StuckSeconds: stuck.Round(time.Second).Seconds()})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// queueStats converts the store's stats; the field sets are the same.
func queueStats(q store.QueueStats) QueueStats {
	return QueueStats{
		Queue: q.Queue, Depth: q.Depth, Visible: q.Visible, InFlight: q.InFlight, WaitingRetry: q.WaitingRetry, Scheduled: q.Scheduled,
		OldestAgeSeconds: q.OldestAgeSeconds, OldestVisibleAgeSeconds: q.OldestVisibleAgeSeconds, DLQ: q.DLQ, DLQDepth: q.DLQDepth,
		Dropped: q.Dropped, Priorities: q.Priorities, CountsEstimated: q.Estimated, Archived: q.Archived, ArchivedEstimated: q.ArchivedEstimated, TotalSent: q.TotalSent, LastHour: Counters(q.LastHour), ThroughputPerMinute: q.ThroughputPerMinute,
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
