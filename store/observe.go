package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueStats is what an operator or agent wants to know about one queue.
// TotalSent is exact for a role that may read the queue's id sequence, and
// a lower bound for one that may only read its tables.
type QueueStats struct {
	Queue string `json:"queue"`
	// Depth splits into Visible + InFlight + WaitingRetry + Scheduled.
	Depth        int64 `json:"depth"`
	Visible      int64 `json:"visible"`
	InFlight     int64 `json:"in_flight"`
	WaitingRetry int64 `json:"waiting_retry"`
	Scheduled    int64 `json:"scheduled"`
	// Ages in seconds; 0 when there is no such message.
	OldestAgeSeconds        float64 `json:"oldest_age_seconds"`
	OldestVisibleAgeSeconds float64 `json:"oldest_visible_age_seconds"`
	// OldestVisibleLevel is the priority level of the message ready
	// longest, for a queue with levels; 0 otherwise.
	OldestVisibleLevel int    `json:"-"`
	DLQ                string `json:"dlq"`
	DLQDepth           int64  `json:"dlq_depth"`
	// Dropped is true for a queue whose tables are gone (dropped by PGMQ's
	// drop_queue, or by hand) while its DLQ holds messages: only DLQ,
	// DLQDepth and the recent counters are read.
	Dropped bool `json:"dropped,omitempty"`
	// Priorities is the number of the queue's priority levels, 0 for a
	// queue without.
	Priorities int `json:"priorities,omitempty"`
	// Estimated says Visible and Depth are estimates (see
	// QueueDepth.Estimated), ArchivedEstimated that Archived is one.
	Estimated         bool     `json:"counts_estimated,omitempty"`
	Archived          int64    `json:"archived"`
	ArchivedEstimated bool     `json:"archived_estimated,omitempty"`
	TotalSent         int64    `json:"total_sent"`
	LastHour          Counters `json:"last_hour"`
	// DeadLetteredRecently counts the dead letters of the last
	// RecentWindow of LastHour's: whether they still come, or stopped.
	DeadLetteredRecently int64   `json:"-"`
	ThroughputPerMinute  float64 `json:"throughput_per_minute"`
	// Latency percentiles are the upper bounds of histogram buckets (powers
	// of two in milliseconds); absent without data in the last hour.
	LatencyP50MS *float64      `json:"latency_p50_ms,omitempty"`
	LatencyP95MS *float64      `json:"latency_p95_ms,omitempty"`
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
	BackoffStrategy          string  `json:"backoff_strategy"`
	RetryBackoffSeconds      float64 `json:"retry_backoff_seconds"`
	RetryBackoffMaxSeconds   float64 `json:"retry_backoff_max_seconds"`
	RetryBackoffJitter       float64 `json:"retry_backoff_jitter"`
	OnSuccess                string  `json:"on_success"`
	DeadlineSeconds          float64 `json:"deadline_seconds"`
	ArchiveRetentionSeconds  float64 `json:"archive_retention_seconds"`
	DeadRetentionSeconds     float64 `json:"dead_retention_seconds"`
}

// Plain returns the settings in plain units.
func (q QueueSettings) Plain() RetrySettings {
	onSuccess := "archive"
	if q.DeleteOnSuccess {
		onSuccess = "delete"
	}
	return RetrySettings{
		MaxRetries: q.MaxRetries, VisibilityTimeoutSeconds: q.VisibilityTimeout.Seconds(),
		BackoffStrategy: q.BackoffStrategy, RetryBackoffSeconds: q.RetryBackoff.Seconds(),
		RetryBackoffMaxSeconds: q.RetryBackoffMax.Seconds(), RetryBackoffJitter: q.RetryBackoffJitter,
		OnSuccess: onSuccess, DeadlineSeconds: q.Deadline.Seconds(),
		ArchiveRetentionSeconds: q.ArchiveRetention.Seconds(), DeadRetentionSeconds: q.DeadRetention.Seconds(),
	}
}

// WorkQueues lists the logical queues that hold work, sorted: those pgbus
// created, and any other PGMQ queue but dead-letter queues and the priority
// sub-queues of a pgbus queue.
func (s *Store) WorkQueues(ctx context.Context) ([]string, error) {
	all, levels, err := s.queueCatalog(ctx)
	if err != nil {
		return nil, err
	}
	return workQueues(all, levels), nil
}

// queueCatalog returns every physical PGMQ queue and the priority levels
// of the queues pgbus created.
func (s *Store) queueCatalog(ctx context.Context) ([]QueueInfo, map[string]int, error) {
	all, err := s.ListQueues(ctx)
	if err != nil {
		return nil, nil, err
	}
	levels, err := s.priorityLevels(ctx)
	return all, levels, err
}

// workQueues is WorkQueues of the queues all and levels.
func workQueues(all []QueueInfo, levels map[string]int) []string {
	sub := map[string]bool{}
	for name, n := range levels {
		for _, p := range physicalNames(name, n) {
			sub[p] = p != name
		}
	}
	seen := map[string]bool{}
	for name := range levels {
		seen[name] = true
	}
	for _, q := range all {
		if !strings.HasSuffix(q.Name, DLQSuffix) && !sub[q.Name] && ValidatePhysicalName(q.Name) == nil {
			seen[q.Name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// QueueLevels returns the priority levels of each queue pgbus made (0 for
// a queue without levels), by queue name: a queue dropped and created
// again while workers ran may have others than those they read.
func (s *Store) QueueLevels(ctx context.Context) (map[string]int, error) {
	return s.priorityLevels(ctx)
}

func (s *Store) priorityLevels(ctx context.Context) (map[string]int, error) {
	rows, err := s.reads.Query(ctx, `SELECT queue_name, priorities FROM pgbus.queues`)
	if err != nil {
		return nil, fmt.Errorf("store: list queues: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("store: list queues: %w", err)
		}
		out[name] = n
	}
	return out, rows.Err()
}

// QueueStatsOptions selects what QueueStats reads besides the queue
// tables.
type QueueStatsOptions struct {
	// Archive counts the messages in each queue's archive (Archived), and
	// reads how many were sent since each queue was created (TotalSent).
	// The archive holds the queue's history, up to its retention, so the
	// count takes time in proportion to it: not for what is read every
	// few seconds (health, probes, pages, watchers). Without it, Archived
	// is 0.
	Archive bool
	// TotalSent reads how many messages were sent to each queue since it
	// was created (TotalSent, a read of its id sequence) without counting
	// its archive. Without it or Archive, TotalSent is 0.
	TotalSent bool
}

// QueueStats returns stats of one logical queue, or of every work queue
// when queue is empty. A queue with priority levels is summed over them;
// one of its levels, asked for by name (jobs_p1), has its own depths and
// its queue's DLQ, settings and pause.
// The stats of a queue dropped with messages left in its DLQ are those of
// its DLQ (Dropped); every queue's include them, sorted among the others.
// A queue without either is not listed. The queue tables are read as
// QueueDepths reads them, many to a statement.
func (s *Store) QueueStats(ctx context.Context, queue string, opts QueueStatsOptions) ([]QueueStats, error) {
	if queue != "" {
		if err := ValidatePhysicalName(queue); err != nil {
			return nil, err
		}
	}
	rd := depthRead{archive: opts.Archive, sent: opts.Archive || opts.TotalSent, only: queue}
	// A priority level asked for alone is read as the physical queue it
	// is, with the DLQ and settings of its queue, which govern it.
	logical := map[string]string{}
	if queue != "" {
		base, _, isLevel, err := levelOf(ctx, s.reads, queue)
		if err != nil {
			return nil, err
		}
		if isLevel {
			rd.onlyDLQ, logical[queue] = DLQName(base), base
		}
	}
	depths, vanished, err := s.depthsOf(ctx, rd)
	// A table of the queue asked for alone went during the read: what is
	// left of it (its other levels, its DLQ) is read again.
	for try := 0; err == nil && vanished && queue != "" && try < 3; try++ {
		depths, vanished, err = s.depthsOf(ctx, rd)
	}
	if err != nil {
		return nil, err
	}
	settings, err := s.AllQueueSettings(ctx)
	if err != nil {
		return nil, err
	}
	counters, err := s.recentCounters(ctx, queue)
	if err != nil {
		return nil, err
	}
	out := make([]QueueStats, len(depths))
	for i, d := range depths {
		st := QueueStats{Queue: d.Queue, Depth: d.Visible + d.InFlight + d.WaitingRetry + d.Scheduled,
			Visible: d.Visible, InFlight: d.InFlight, WaitingRetry: d.WaitingRetry, Scheduled: d.Scheduled,
			OldestAgeSeconds: d.OldestAgeSeconds, OldestVisibleAgeSeconds: d.OldestVisibleAgeSeconds, OldestVisibleLevel: d.OldestVisibleLevel,
			DLQ: rd.dlqOf(d.Queue), DLQDepth: d.DLQDepth, Dropped: d.Dropped, Priorities: d.Priorities, Estimated: d.Estimated,
			Archived: d.archived, ArchivedEstimated: d.archivedEstimated, TotalSent: d.totalSent}
		// A dropped queue shows the settings it gets when created again
		// (those kept, or the defaults): empty ones are no settings at all,
		// and a strict client's check of the stats' schema refuses them.
		governing := cmp.Or(logical[d.Queue], d.Queue)
		set, ok := settings[governing]
		if !ok {
			set = DefaultQueueSettings(governing)
		}
		st.Settings = set.Plain()
		if !d.Dropped {
			st.Paused = set.Paused
		}
		counters[d.Queue].apply(&st)
		out[i] = st
	}
	return out, nil
}

// droppedQueues returns the queues, other than queues and the priority
// levels of those, whose DLQs are among all: dropped by PGMQ's
// drop_queue, or by hand, leaving their DLQs and dead messages behind.
func droppedQueues(all []QueueInfo, queues []string, levels map[string]int) []string {
	work := make(map[string]bool, len(queues))
	for _, q := range queues {
		work[q] = true
		for _, p := range physicalNames(q, levels[q]) {
			work[p] = true
		}
	}
	var out []string
	for _, q := range all {
		base, isDLQ := strings.CutSuffix(q.Name, DLQSuffix)
		if isDLQ && !strings.HasSuffix(base, DLQSuffix) && ValidatePhysicalName(q.Name) == nil && !work[base] {
			out = append(out, base)
		}
	}
	return out
}

// totalSentSQL is the SQL for the number of messages sent to queue since
// it was created,
// whose table's name is the parameter param: the ids its msg_id sequence
// handed out since its start (sentOfSequenceSQL). A role granted SELECT on
// the queue's tables alone may not read the sequence (GRANT ... ON ALL
// TABLES leaves sequences out); it gets a lower bound instead: the larger
// of the inserts into the table that the statistics system counted and
// the ids from the sequence's start to the highest the queue and its
// archive (when it has one) still hold.
func totalSentSQL(queue, param string, hasArchive bool) string {
	archived := ``
	if hasArchive {
		archived = `, (SELECT max(msg_id) FROM ` + archiveTable(queue) + `) - ` + sequenceStartSQL("s.seq") + ` + 1`
	}
	return `coalesce((SELECT CASE WHEN has_sequence_privilege(s.seq, 'SELECT, USAGE') THEN ` + sentOfSequenceSQL("s.seq") + `
		       ELSE greatest(pg_stat_get_tuples_inserted(` + param + `::regclass),
		                     (SELECT max(msg_id) FROM ` + queueTable(queue) + `) - ` + sequenceStartSQL("s.seq") + ` + 1` + archived + `) END
		       FROM (SELECT pg_get_serial_sequence(` + param + `, 'msg_id')::regclass AS seq) s), 0)`
}

// sentOfSequenceSQL is the SQL for the number of ids the sequence whose
// regclass is the SQL expression seq handed out since its start, for a
// role that may read it: 0 before its first. A queue made again under the
// name of one dropped starts its sequence after the ids the name had
// (startIDsAfter), so that it counts its own messages alone.
func sentOfSequenceSQL(seq string) string {
	return `greatest(coalesce(pg_sequence_last_value(` + seq + `) - ` + sequenceStartSQL(seq) + ` + 1, 0), 0)`
}

// sequenceStartSQL is the SQL for the start value of the sequence whose
// regclass is the SQL expression seq, from the catalog, which every role
// may read.
func sequenceStartSQL(seq string) string {
	return `(SELECT sq.seqstart FROM pg_catalog.pg_sequence sq WHERE sq.seqrelid = ` + seq + `)`
}

// RecentWindow is the span of QueueStats.DeadLetteredRecently: the
// current minute of pgbus.stats_minute and the 14 before it.
const RecentWindow = 15 * time.Minute

// recent holds one queue's counters from pgbus.stats_minute.
type recent struct {
	hour     Counters
	settled5 int64
	dead     int64 // in the last RecentWindow
	buckets  [LatencyBuckets]int64
}

func (r *recent) apply(st *QueueStats) {
	if r == nil {
		return
	}
	st.LastHour = r.hour
	st.DeadLetteredRecently = r.dead
	st.ThroughputPerMinute = float64(r.settled5) / 5
	st.LatencyP50MS = percentile(r.buckets[:], 0.50)
	st.LatencyP95MS = percentile(r.buckets[:], 0.95)
}

func (s *Store) recentCounters(ctx context.Context, queue string) (map[string]*recent, error) {
	rows, err := s.reads.Query(ctx, `
		SELECT queue_name, sum(succeeded), sum(failed), sum(retried), sum(dead_lettered), sum(discarded),
		       sum(succeeded + dead_lettered + discarded) FILTER (WHERE minute >= date_trunc('minute', now()) - interval '4 minutes'),
		       sum(dead_lettered) FILTER (WHERE minute >= date_trunc('minute', now()) - interval '14 minutes'),
		       (SELECT array_agg(total ORDER BY i) FROM (
		           SELECT u.i, sum(u.b) AS total FROM pgbus.stats_minute s2, unnest(s2.latency_buckets) WITH ORDINALITY AS u(b, i)
		           WHERE s2.queue_name = s.queue_name AND s2.minute >= now() - interval '1 hour' GROUP BY u.i) t)
		FROM pgbus.stats_minute s
		WHERE minute >= now() - interval '1 hour' AND ($1 = '' OR queue_name = $1)
		GROUP BY queue_name`, queue)
	if err != nil {
		return nil, fmt.Errorf("store: read recent counters: %w", err)
	}
	defer rows.Close()
	out := map[string]*recent{}
	for rows.Next() {
		var name string
		var r recent
		var settled, dead *int64
		var buckets []int64
		if err := rows.Scan(&name, &r.hour.Succeeded, &r.hour.Failed, &r.hour.Retried, &r.hour.DeadLettered, &r.hour.Discarded, &settled, &dead, &buckets); err != nil {
			return nil, fmt.Errorf("store: read recent counters: %w", err)
		}
		if settled != nil {
			r.settled5 = *settled
		}
		if dead != nil {
			r.dead = *dead
		}
		copy(r.buckets[:], buckets)
		out[name] = &r
	}
	return out, rows.Err()
}

// percentile returns the upper bound in milliseconds of the bucket holding
// the p-th latency, or nil without data.
func percentile(buckets []int64, p float64) *float64 {
	var total int64
	for _, b := range buckets {
		total += b
	}
	if total == 0 {
		return nil
	}
	want := int64(math.Ceil(p * float64(total)))
	var seen int64
	for i, b := range buckets {
		seen += b
		if seen >= want {
			upper := 0.5 * math.Pow(2, float64(i))
			return &upper
		}
	}
	return nil
}

// Live message states.
const (
	StateWaiting   = "waiting"
	StateInFlight  = "in_flight"
	StateRetrying  = "retrying"
	StateScheduled = "scheduled"
)

// LiveFilter selects live messages of one queue. State is empty for all.
type LiveFilter struct {
	Queue string `json:"queue"`
	State string `json:"state,omitempty"`
	// PayloadChars is how much of each payload a list reads: all of it
	// for 0, none for LivePayloadNone, else the first PayloadChars
	// characters of its JSON text. It selects no message: a list that
	// shows a preview of each payload, or none, reads what it shows, not
	// megabytes a message.
	PayloadChars int `json:"-"`
	// PayloadLater leaves every payload in the database, whatever
	// PayloadChars asks for: each message's PayloadRead gives the bytes
	// PayloadChars reads of it, which LivePayloads reads once the caller
	// is ready to hold them.
	PayloadLater bool `json:"-"`
}

// LivePayloadNone is the PayloadChars of a list that reads no payload.
const LivePayloadNone = -1

// LiveMessage is a message still in its queue, with its failures so far.
// Queue is the physical queue that holds it: of a queue with priority
// levels, the level's (orders_p1).
type LiveMessage struct {
	Queue string `json:"queue"`
	// Priority is the message's level, for a queue with priority levels
	// (0 is read first); nil for a queue without.
	Priority *int   `json:"priority,omitempty"`
	MsgID    int64  `json:"msg_id"`
	Kind     string `json:"kind,omitempty"`
	State    string `json:"state"`
	// HeldBy names the circuit breaker whose snooze the message waits
	// out (state scheduled): a reset of the breaker runs it at once.
	HeldBy     string    `json:"held_by,omitempty"`
	ReadCount  int       `json:"read_ct"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	VisibleAt  time.Time `json:"visible_at"`
	// Payload is the payload's JSON text, or as much of its start as the
	// list read (PayloadCut), or nil when it read none.
	Payload json.RawMessage `json:"payload,omitempty"`
	// PayloadBytes is the size of the whole payload's JSON text.
	PayloadBytes int  `json:"payload_bytes"`
	PayloadCut   bool `json:"payload_cut,omitempty"`
	// PayloadRead is the size of what LiveFilter.PayloadChars reads of the
	// payload's JSON text, whether or not the list read it (PayloadLater).
	PayloadRead int             `json:"-"`
	Headers     json.RawMessage `json:"headers,omitempty"`
	History     []FailureRecord `json:"history"`
}

// LivePage is a page of live messages, level 0 first, then oldest first.
type LivePage struct {
	Items      []LiveMessage `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// liveLevel is one physical queue a list of live messages reads, with its
// priority level (nil for a queue without levels).
type liveLevel struct {
	queue    string
	priority *int
}

// liveLevels returns the physical queues that hold the live messages of
// name, in the order workers read them: a queue with priority levels is
// its levels, level 0 first; a level named alone (orders_p1) or a plain
// queue is itself.
func (s *Store) liveLevels(ctx context.Context, name string) ([]liveLevel, error) {
	physical, err := s.PhysicalQueues(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(physical) > 1 || physical[0] != name {
		out := make([]liveLevel, len(physical))
		for i, q := range physical {
			out[i] = liveLevel{queue: q, priority: &i}
		}
		return out, nil
	}
	_, level, ok, err := s.LevelOf(ctx, name)
	if err != nil || !ok {
		return []liveLevel{{queue: name}}, err
	}
	return []liveLevel{{queue: name, priority: &level}}, nil
}

// ListLive lists the live messages of a queue with their failure history:
// of a queue with priority levels, those of every level, level 0 (which
// workers read first) first; within a level oldest first. A page reads
// the levels in turn while it fills, each for at most the rows the page
// still lacks and one more, which tells whether a next page has any.
func (s *Store) ListLive(ctx context.Context, f LiveFilter, cursor string, limit int) (LivePage, error) {
	s.textFit(ctx) // learned, for TextShown
	if err := ValidatePhysicalName(f.Queue); err != nil {
		return LivePage{}, err
	}
	if !slices.Contains([]string{"", StateWaiting, StateInFlight, StateRetrying, StateScheduled}, f.State) {
		return LivePage{}, invalidf("state %q: use waiting, in_flight, retrying or scheduled, or leave it empty for all", f.State)
	}
	if limit < 1 || limit > 100 {
		return LivePage{}, invalidf("limit must be 1 to 100, not %d", limit)
	}
	after, err := decodeLiveCursor(f, cursor)
	if err != nil {
		return LivePage{}, err
	}
	levels, err := s.liveLevels(ctx, f.Queue)
	if err != nil {
		return LivePage{}, err
	}
	if after.level >= len(levels) {
		// A queue dropped since has no levels left and reads as one plain
		// queue: that it is gone is what the caller needs to hear, not
		// that its levels changed.
		ok, err := s.QueueExists(ctx, levels[0].queue)
		if err != nil {
			return LivePage{}, err
		}
		if !ok {
			return LivePage{}, notFoundf("queue %q does not exist", f.Queue)
		}
		return LivePage{}, cursorf("cursor points past the priority levels queue %q has now, which changed since it was issued; start again without cursor", f.Queue)
	}
	page := LivePage{Items: []LiveMessage{}}
	last, more := after, false
	for i := after.level; i < len(levels) && !more; i++ {
		from := int64(0)
		if i == after.level {
			from = after.id
		}
		want := limit - len(page.Items)
		items, err := s.listLevel(ctx, levels[i], f.State, f.PayloadChars, f.PayloadLater, from, want+1)
		if err != nil {
			return LivePage{}, err
		}
		// The row past the page says there is a next one, which starts
		// after the page's last row.
		if more = len(items) > want; more {
			items = items[:want]
		}
		if len(items) == 0 {
			continue
		}
		if err := s.attachHistory(ctx, levels[i].queue, items); err != nil {
			return LivePage{}, err
		}
		page.Items = append(page.Items, items...)
		last = livePosition{level: i, id: items[len(items)-1].MsgID}
	}
	if more {
		page.NextCursor = encodeLiveCursor(f, last)
	}
	return page, nil
}

// listLevel reads up to n live messages of one level after id from, in
// state (all for ""), oldest first, with as much of each payload as
// chars says (LiveFilter.PayloadChars), none when later. The payload's
// text, its size, the size of what chars reads and its kind are taken in
// the outer query, for the rows of the page only.
func (s *Store) listLevel(ctx context.Context, l liveLevel, state string, chars int, later bool, from int64, n int) ([]LiveMessage, error) {
	sql := `SELECT m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.headers, m.state, m.held_by,
			CASE WHEN $5::int < 0 OR $6 THEN NULL ELSE ` + payloadCharsSQL("p.t", "$5::int") + ` END,
			coalesce(octet_length(p.t), 0), CASE WHEN $5::int < 0 THEN 0 ELSE coalesce(octet_length(` + payloadCharsSQL("p.t", "$5::int") + `), 0) END,
			coalesce(m.headers->>'` + HeaderKind + `', m.message->>'job_class', '')
		FROM (
			SELECT q.msg_id, q.read_ct, q.enqueued_at, q.vt, q.message, q.headers,
			       CASE WHEN q.vt <= now() THEN 'waiting'
			            WHEN q.read_ct = 0 OR ` + breakerHeldSQL + ` THEN 'scheduled'
			            WHEN ` + lastAttemptFailedSQL("$1") + ` THEN 'retrying'
			            ELSE 'in_flight' END AS state,
			       CASE WHEN q.vt > now() THEN ` + breakerHeldBySQL + ` ELSE '' END AS held_by
			FROM ` + queueTable(l.queue) + ` q WHERE q.msg_id > $2` + visibleSQL(state) + ` ORDER BY q.msg_id) m
		CROSS JOIN LATERAL (SELECT m.message::text AS t OFFSET 0) p
		WHERE $3 = '' OR m.state = $3 ORDER BY m.msg_id LIMIT $4`
	rows, err := s.reads.Query(ctx, sql, l.queue, from, state, n, chars, later)
	if err != nil {
		return nil, queueErr(err, "list messages of", l.queue)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LiveMessage, error) {
		m := LiveMessage{Queue: l.queue, Priority: l.priority}
		var payload, headers []byte
		err := r.Scan(&m.MsgID, &m.ReadCount, &m.EnqueuedAt, &m.VisibleAt, &headers, &m.State, &m.HeldBy, &payload, &m.PayloadBytes, &m.PayloadRead, &m.Kind)
		m.Payload, m.Headers = payload, headers
		m.PayloadCut = payload != nil && len(payload) < m.PayloadBytes
		return m, err
	})
	if err != nil {
		return nil, queueErr(err, "list messages of", l.queue)
	}
	return items, nil
}

// payloadCharsSQL is the SQL of what chars (LiveFilter.PayloadChars, not
// negative) reads of text t: all of it for 0, else its first chars
// characters.
func payloadCharsSQL(t, chars string) string {
	return `CASE WHEN ` + chars + ` = 0 THEN ` + t + ` ELSE left(` + t + `, ` + chars + `) END`
}

// LivePayload is what LivePayloads read of one live message's payload.
type LivePayload struct {
	// Payload is the payload's JSON text, or as much of its start as
	// was read (Cut).
	Payload json.RawMessage
	Cut     bool
}

// LivePayloads reads the payloads of the live messages ids of queue, the
// physical queue that holds them (LiveMessage.Queue), as much of each as
// chars says (LiveFilter.PayloadChars), for a list that read the rest of
// the messages without them (LiveFilter.PayloadLater). A message no longer
// in the queue (done, archived or dead since) has no entry.
func (s *Store) LivePayloads(ctx context.Context, queue string, ids []int64, chars int) (map[int64]LivePayload, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return nil, err
	}
	if chars < 0 {
		return nil, invalidf("read live payloads: chars %d reads none; give 0 for all of each, or how many characters", chars)
	}
	out := make(map[int64]LivePayload, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.reads.Query(ctx, `SELECT q.msg_id, `+payloadCharsSQL("p.t", "$2::int")+`, octet_length(p.t)
		FROM `+queueTable(queue)+` q CROSS JOIN LATERAL (SELECT q.message::text AS t OFFSET 0) p
		WHERE q.msg_id = ANY($1)`, ids, chars)
	if err != nil {
		return nil, queueErr(err, "read the payloads of", queue)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var payload []byte
		var size *int
		if err := rows.Scan(&id, &payload, &size); err != nil {
			return nil, queueErr(err, "read the payloads of", queue)
		}
		out[id] = LivePayload{Payload: payload, Cut: payload != nil && size != nil && len(payload) < *size}
	}
	if err := rows.Err(); err != nil {
		return nil, queueErr(err, "read the payloads of", queue)
	}
	return out, nil
}

// visibleSQL narrows a live listing of state to the messages of its side
// of the visibility timeout, in words the planner can take to the queue's
// vt index: in a backlog of millions waiting, the few in flight, retrying
// or scheduled are found through it instead of by reading every message.
func visibleSQL(state string) string {
	switch state {
	case "":
		return ""
	case StateWaiting:
		return " AND q.vt <= now()"
	}
	return " AND q.vt > now()"
}

func (s *Store) attachHistory(ctx context.Context, queue string, items []LiveMessage) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]int64, len(items))
	byID := make(map[int64]*LiveMessage, len(items))
	for i := range items {
		ids[i] = items[i].MsgID
		items[i].History = []FailureRecord{}
		byID[items[i].MsgID] = &items[i]
	}
	rows, err := s.reads.Query(ctx, `SELECT id, queue_name, msg_id, attempt, kind, error_class, error_message, backtrace, failed_at, detail
		FROM pgbus.failures WHERE queue_name = $1 AND msg_id = ANY($2) ORDER BY msg_id, attempt, id`, queue, ids)
	if err != nil {
		return fmt.Errorf("store: read failure history of %s: %w", queue, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f FailureRecord
		var detail []byte
		if err := rows.Scan(&f.ID, &f.Queue, &f.MsgID, &f.Attempt, &f.Kind, &f.ErrorClass, &f.ErrorMessage, &f.Backtrace, &f.FailedAt, &detail); err != nil {
			return fmt.Errorf("store: read failure history of %s: %w", queue, err)
		}
		f.Detail = parseDetail(detail)
		if m := byID[f.MsgID]; m != nil {
			m.History = append(m.History, f)
		}
	}
	return rows.Err()
}

// KindOf is a message's kind: its pgbus_kind header, or for messages
// written by Ruby pgbus the job_class of its payload, read as the DLQ's
// views, filters and groups read them in SQL (coalesce of ->>): a value
// that is no string is its JSON text (as jsonb writes it, which is how
// headers and payloads come from the database), and only an absent or
// null pgbus_kind falls back to job_class.
func KindOf(headers map[string]json.RawMessage, payload json.RawMessage) string {
	if k, ok := jsonText(headers[HeaderKind]); ok {
		return k
	}
	// Its top level's values as spans of the payload, not copies: a
	// worker reads the kind of every message it runs, of up to 8 MiB.
	var body map[string]jsonSpan
	if len(payload) > 0 && payload[0] == '{' && json.Unmarshal(payload, &body) == nil {
		k, _ := jsonText(json.RawMessage(body["job_class"]))
		return k
	}
	return ""
}

// jsonSpan is a JSON value as the span of the text it was read from, which
// json.Unmarshal hands it without copying: valid only while that text is
// unchanged, as a payload being read is.
type jsonSpan []byte

func (s *jsonSpan) UnmarshalJSON(b []byte) error {
	*s = b
	return nil
}

// jsonText is a JSON value as PostgreSQL's ->> gives it: a string's
// contents, the JSON text of any other value; false for null or none.
func jsonText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(raw), true
}

// A live-message cursor is liveCursorTag, the position of the last message
// of its page (the index of its priority level among the queue's levels,
// one byte, 0 for a queue without levels; its id, 8 bytes, big-endian) and
// the fingerprint of its filter, in base64url. The position is one only
// among the messages of one queue, in one state's list: with another
// filter it would give a wrong page, empty or skipping messages, as if it
// were right. Cursors of the previous form (liveCursorV1Tag, the id and the
// fingerprint) are positions in the first level, as their lists had only
// one, and go on working. The cursors of an older pgbus still named no
// filter ("m" and the id) and are refused.
const (
	liveCursorTag     = 'P'
	liveCursorBytes   = 1 + 1 + 8 + livePrintBytes
	liveCursorV1Tag   = 'L'
	liveCursorV1Bytes = 1 + 8 + livePrintBytes
	livePrintBytes    = 6
)

// livePosition is where a page of live messages ends: the message id in
// the level of that index.
type livePosition struct {
	level int
	id    int64
}

// fingerprint identifies f in a live-message cursor.
func (f LiveFilter) fingerprint() []byte {
	sum := sha256.Sum256([]byte(f.Queue + "\x00" + f.State))
	return sum[:livePrintBytes]
}

func encodeLiveCursor(f LiveFilter, p livePosition) string {
	b := make([]byte, 0, liveCursorBytes)
	b = append(b, liveCursorTag, byte(p.level))
	b = binary.BigEndian.AppendUint64(b, uint64(p.id))
	b = append(b, f.fingerprint()...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeLiveCursor returns the position after which the page of f that
// cursor c asks for starts; the start of the first level for no cursor.
func decodeLiveCursor(f LiveFilter, c string) (livePosition, error) {
	if c == "" {
		return livePosition{}, nil
	}
	bad := errBadCursor
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) == 0 {
		return livePosition{}, bad
	}
	var p livePosition
	switch {
	case raw[0] == liveCursorTag && len(raw) == liveCursorBytes:
		p.level, raw = int(raw[1]), raw[2:]
	case raw[0] == liveCursorV1Tag && len(raw) == liveCursorV1Bytes:
		raw = raw[1:]
	default:
		return livePosition{}, bad
	}
	p.id = int64(binary.BigEndian.Uint64(raw[:8]))
	if p.id <= 0 || p.level >= MaxPriorities {
		return livePosition{}, bad
	}
	if !bytes.Equal(raw[8:], f.fingerprint()) {
		return livePosition{}, cursorf("cursor was issued for another queue or state; pass the queue and state of the first page, or start again without cursor")
	}
	return p, nil
}
