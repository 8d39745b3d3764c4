package metrics

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"math"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/hiddenchar"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/ops"
)

// Defaults of Options.
const (
	// DefaultMaxErrorClasses bounds the values of the error_class label.
	DefaultMaxErrorClasses = 20
	// DefaultMaxKinds bounds the values of the kind label.
	DefaultMaxKinds = 50
	// DefaultCacheFor is how long one read of the database serves scrapes.
	DefaultCacheFor = 2 * time.Second
	// DefaultGaugesGrace is how long the gauges of the last successful
	// read are served while reads fail. A lock on one queue's table (LOCK
	// TABLE, VACUUM FULL, a slow ALTER) fails the read of every queue's
	// gauges; served through it, dashboards keep their data and the
	// alerts pending on the gauges keep their clocks (their for: is 5 or
	// 10 minutes), so that a lock of a few seconds a minute cannot hold
	// them back for ever. Two minutes covers a few scrapes at the usual
	// intervals (15 s to 1 min) while the values, frozen, stay close to
	// the truth: less than the shortest for: of the rules on them, and no
	// longer than PgbusDatabaseUnreachable waits.
	DefaultGaugesGrace = 2 * time.Minute
	// Other is the label value of the error classes, kinds and tools past
	// their bound, and of one longer than MaxLabelBytes.
	Other = "other"
	// MaxLabelBytes is the longest error class, kind or tool name that is
	// a label value of its own: a kind another producer wrote into a
	// queue can be of any length, and one of 100,000 characters made a
	// scrape that a Prometheus with label_value_length_limit refuses
	// whole, the database's gauges with it. A send gives at most 255.
	MaxLabelBytes = 255
)

// Options configure Metrics.
type Options struct {
	// Ops reads the gauges (queue depths, DLQ depths, oldest ready ages,
	// breaker states, running workers) when a scrape asks for them. Nil
	// leaves them out: the process then reports only its own jobs and
	// tool calls.
	Ops *ops.Service
	// MaxErrorClasses is how many error classes get their own
	// error_class label value: the most frequent seen (see the package
	// documentation); the rest are "other". Default
	// DefaultMaxErrorClasses.
	MaxErrorClasses int
	// MaxKinds is how many kinds get their own kind label value, chosen
	// as the error classes are; the rest are "other". Default
	// DefaultMaxKinds.
	MaxKinds int
	// CacheFor is how long one read of the gauges serves scrapes, so that
	// scrapes that come together read the database once. Default
	// DefaultCacheFor; a negative value reads at every scrape.
	CacheFor time.Duration
	// Logger receives the errors of reading the gauges, at warn level.
	Logger *slog.Logger
	// GaugesGrace is how long, when a read of the gauges fails, the
	// gauges of the last successful read are served instead; past it they
	// are left out until a read succeeds. Default DefaultGaugesGrace; a
	// negative value serves none.
	GaugesGrace time.Duration
}

// Metrics counts what a pgbus process does and reads the state of the
// database when scraped. It is a prometheus.Collector (register it), an
// engine.Observer and engine.BreakerObserver (pass it in
// engine.Config.Observers), and counts MCP tool calls (ToolCalled). It is
// safe for concurrent use.
type Metrics struct {
	opts Options
	log  *slog.Logger

	finished    *prometheus.CounterVec
	failures    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	latency     *prometheus.HistogramVec
	transitions *prometheus.CounterVec
	toolCalls   *prometheus.CounterVec

	classes, kinds, tools *labelSet
	texts                 labelTexts

	queueMessages *prometheus.Desc
	estimated     *prometheus.Desc
	dlqMessages   *prometheus.Desc
	oldestReady   *prometheus.Desc
	breakerState  *prometheus.Desc
	breakerHeld   *prometheus.Desc
	workers       *prometheus.Desc
	queueWorkers  *prometheus.Desc
	queuePaused   *prometheus.Desc
	queueManaged  *prometheus.Desc
	databaseUp    *prometheus.Desc
	schemaReady   *prometheus.Desc
	gaugesAge     *prometheus.Desc
	buildInfo     *prometheus.Desc
	sessionsOpen  *prometheus.Desc
	streamsOpen   *prometheus.Desc

	mcpMu   sync.Mutex
	mcpOpen map[string]func() MCPOpen // what WatchMCP was given, by transport

	mu     sync.Mutex // held while the gauges are read, so scrapes wait for one read
	readAt time.Time  // when the gauges were last read, successfully or not
	readOK bool       // the last read succeeded
	good   ops.Gauges // the gauges of the last successful read
	goodAt time.Time  // when they were read; zero before the first
	born   time.Time  // when the metrics were made: the gauges' age before a read succeeds
	// up: the database answered the last read, or a question asked
	// after it failed (pgbus_database_up).
	up bool
	// schemaNotReady: the database answered the last read that it
	// answered, saying its pgbus schema is not ready for this process
	// (pgbus_schema_ready 0).
	schemaNotReady bool
	warned         quietlog.Log // the failed reads told to the log
}

var (
	_ prometheus.Collector   = (*Metrics)(nil)
	_ engine.Observer        = (*Metrics)(nil)
	_ engine.BreakerObserver = (*Metrics)(nil)
)

// Buckets of the histograms, in seconds.
var (
	// DurationBuckets span a millisecond to five minutes of handler run.
	DurationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	// LatencyBuckets span five milliseconds to an hour of waiting.
	LatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
)

// New returns the metrics of one process.
func New(opts Options) *Metrics {
	if opts.MaxErrorClasses <= 0 {
		opts.MaxErrorClasses = DefaultMaxErrorClasses
	}
	if opts.MaxKinds <= 0 {
		opts.MaxKinds = DefaultMaxKinds
	}
	if opts.CacheFor == 0 {
		opts.CacheFor = DefaultCacheFor
	}
	if opts.GaugesGrace == 0 {
		opts.GaugesGrace = DefaultGaugesGrace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		opts: opts, log: log, born: time.Now(),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pgbus_jobs_finished_total",
			Help: "Deliveries of jobs this process settled, by queue, kind and outcome (succeeded, retried, dead_lettered, discarded, snoozed); reason says why a dead-lettered job died (max_retries_exceeded, non_retryable_error, deadline_exceeded) and is empty otherwise."},
			[]string{"queue", "kind", "outcome", "reason"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pgbus_job_failures_total",
			Help: "Deliveries of jobs this process settled with an error, by queue, outcome (retried, dead_lettered, discarded) and error class; classes past the bound are counted as \"other\"."},
			[]string{"queue", "outcome", "error_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pgbus_job_attempt_duration_seconds",
			Help: "How long each run of a handler took in this process, by queue.", Buckets: DurationBuckets},
			[]string{"queue"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pgbus_job_start_latency_seconds",
			Help: "How long a job waited from being enqueued (or becoming visible again for a retry) until this process delivered it, by queue.", Buckets: LatencyBuckets},
			[]string{"queue"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pgbus_circuit_breaker_transitions_total",
			Help: "Changes of circuit breaker state caused by this process's jobs, by breaker and the states from and to (closed, open, half_open)."},
			[]string{"breaker", "from", "to"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pgbus_mcp_tool_calls_total",
			Help: "MCP tool calls this server answered, by tool and result: ok, error (a tool error the caller can fix), unavailable (the database did not answer), failed (a protocol error), cancelled (its client cancelled it, went away or ended its session first) or asked (answered with a question for the user, whose answer comes in a call of its own)."},
			[]string{"tool", "result"}),
		queueMessages: prometheus.NewDesc("pgbus_queue_messages",
			"Messages in each queue by state: visible (ready to run), in_flight (being run), waiting_retry (failed, waiting for their backoff) and scheduled (sent with a delay, snoozed, or given back by a stopped worker while its handler ignored the stop).",
			[]string{"queue", "state"}, nil),
		estimated: prometheus.NewDesc("pgbus_queue_messages_estimated",
			"1 when the queue's visible count is PostgreSQL's estimate of its table's rows less those behind the visibility timeout (a table of more than 1,000,000 messages or 32 MB, which is not counted row by row at each read), several percent off; 0 when it was counted.",
			[]string{"queue"}, nil),
		dlqMessages: prometheus.NewDesc("pgbus_dlq_messages",
			"Messages in each queue's dead-letter queue.", []string{"queue"}, nil),
		oldestReady: prometheus.NewDesc("pgbus_queue_oldest_ready_age_seconds",
			"How long the message of each queue ready (visible) longest has waited for a worker: since it was sent, or since its delay, retry backoff or visibility timeout ended; 0 when none is ready.", []string{"queue"}, nil),
		breakerState: prometheus.NewDesc("pgbus_circuit_breaker_state",
			"State of each circuit breaker: 1 for the state it is in (closed, open or half_open), 0 for the others.", []string{"breaker", "state"}, nil),
		breakerHeld: prometheus.NewDesc("pgbus_circuit_breaker_held_jobs",
			"Jobs each circuit breaker holds: snoozed while it was open, no attempt used, they wait in its users' queues until it lets calls through again; a reset runs them at once. 0 for a closed breaker.", []string{"breaker"}, nil),
		workers: prometheus.NewDesc("pgbus_workers_running",
			"Worker processes heartbeating now, in every process using this database.", nil, nil),
		queueWorkers: prometheus.NewDesc("pgbus_queue_workers_running",
			"Worker processes heartbeating now that serve each queue; 0 for a queue no running process works.", []string{"queue"}, nil),
		queuePaused: prometheus.NewDesc("pgbus_queue_paused",
			"1 when the queue is paused (workers read none of its messages until it is resumed), 0 otherwise.", []string{"queue"}, nil),
		queueManaged: prometheus.NewDesc("pgbus_queue_managed",
			"1 when pgbus manages the queue: made or registered with pgbus, or served by a pgbus worker process now or within the last 24 hours; 0 for another PGMQ client's queue that no pgbus worker serves, whose messages wait for that client (the worker and backlog alerts leave it out).", []string{"queue"}, nil),
		databaseUp: prometheus.NewDesc("pgbus_database_up",
			"1 when the database answers: the last read of the queue, breaker and worker gauges succeeded, or, when it did not (a lock on a queue's table), a question asked after it was answered; 0 when it does not answer.", nil, nil),
		schemaReady: prometheus.NewDesc("pgbus_schema_ready",
			"0 while the database answers but its pgbus schema is not ready for this process, which then serves no call and runs no worker: missing, older than this pgbus (and the process may not migrate it), newer and unreadable, or being migrated (/readyz and pgbus health say why, and what to do); 1 otherwise.", nil, nil),
		gaugesAge: prometheus.NewDesc("pgbus_gauges_age_seconds",
			"Seconds since the queue, DLQ, breaker and worker gauges were last read from the database (since the process started, before the first read): near 0 while reads succeed. While reads fail, the last successful read's gauges are served for a grace (2 minutes unless the program chose another), then left out, and this keeps growing: with pgbus_database_up 1, a session holds a lock on a pgbus or PGMQ table (pgbus health names it).", nil, nil),
	}
	m.sessionsOpen = prometheus.NewDesc("pgbus_mcp_sessions_open",
		"MCP sessions this server holds open, by transport: http (Streamable HTTP, from an initialize that succeeded until DELETE, the idle timeout or an end to make room for a new one; clients of protocol 2026-07-28 have none) and sse (each event stream is a session).",
		[]string{"transport"}, nil)
	m.streamsOpen = prometheus.NewDesc("pgbus_mcp_streams_open",
		"Event streams this MCP server holds open, by transport: http (each session's GET stream, a resumed one included, and each subscriptions/listen request of protocol 2026-07-28) and sse (each /sse stream, which is its session).",
		[]string{"transport"}, nil)
	m.buildInfo = prometheus.NewDesc("pgbus_build_info",
		"Always 1, labelled with the pgbus this process runs: its version and the commit it was built from (empty when the build recorded none). In a rolling deploy, count the processes of each version with count by (version) (pgbus_build_info).",
		nil, prometheus.Labels{"version": buildinfo.Version(), "commit": shortCommit()})
	m.classes = newLabelSet(opts.MaxErrorClasses, func(class string) { m.failures.DeletePartialMatch(prometheus.Labels{"error_class": class}) })
	m.kinds = newLabelSet(opts.MaxKinds, func(kind string) { m.finished.DeletePartialMatch(prometheus.Labels{"kind": kind}) })
	m.tools = newLabelSet(64, nil) // the tools are a fixed set
	return m
}

// JobStarted implements engine.Observer; it counts nothing.
func (m *Metrics) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }

// JobFinished implements engine.Observer: it counts the delivery's outcome
// and, when the handler ran, how long it took and waited.
func (m *Metrics) JobFinished(_ context.Context, job *engine.Job, f engine.Finish) {
	queue := cmp.Or(job.WorkQueue, job.Queue) // a priority level counts as its queue, as in the stats
	m.kinds.with(m.texts.of(job.Kind), func(kind string) { m.finished.WithLabelValues(queue, kind, f.Outcome, f.Reason).Inc() })
	if f.Err != nil && f.Outcome != engine.OutcomeSnoozed {
		m.classes.with(m.texts.of(f.ErrorClass), func(class string) { m.failures.WithLabelValues(queue, f.Outcome, class).Inc() })
	}
	if f.Ran {
		m.duration.WithLabelValues(queue).Observe(f.Elapsed.Seconds())
		m.latency.WithLabelValues(queue).Observe(f.Latency.Seconds())
	}
}

// labelText is a kind or an error class as a label value: another
// producer writes kinds, and a handler its error classes, so a secret in
// one is redacted, as the log redacts it, and the characters a terminal
// acts on or that reorder text are escaped, for whoever reads /metrics.
func labelText(s string) string {
	s, _ = ops.RedactText(s)
	return hiddenchar.Escape(s)
}

// labelTexts remembers the label text of the kinds and error classes
// lately seen: redacting one costs more than counting its job, and a
// process sees the same few again and again.
type labelTexts struct {
	mu   sync.RWMutex
	text map[string]string
}

// Bounds of labelTexts: how many texts it keeps before it starts over,
// and the longest value it keeps (a longer one is redacted every time).
const (
	maxLabelTexts    = 1024
	maxLabelTextSize = 1024
)

func (c *labelTexts) of(raw string) string {
	c.mu.RLock()
	t, ok := c.text[raw]
	c.mu.RUnlock()
	if ok {
		return t
	}
	t = labelText(raw)
	if len(raw) > maxLabelTextSize {
		return t
	}
	c.mu.Lock()
	if c.text == nil || len(c.text) >= maxLabelTexts {
		c.text = make(map[string]string)
	}
	c.text[raw] = t
	c.mu.Unlock()
	return t
}

// BreakerChanged implements engine.BreakerObserver.
func (m *Metrics) BreakerChanged(name, from, to string) {
	m.transitions.WithLabelValues(name, from, to).Inc()
}

// Results of a tool call, as ToolCalled takes them.
const (
	ToolOK     = "ok"
	ToolError  = "error"
	ToolFailed = "failed"
	// ToolAsked is a call answered with a question for the person at the
	// client (protocol 2026-07-28 confirmations); the call bringing the
	// answer is counted by its own result.
	ToolAsked = "asked"
)

// toolName is what a tool's name looks like; anything else is counted as
// "other".
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ToolCalled counts one MCP tool call and its result (ToolOK, ToolError or
// ToolFailed).
func (m *Metrics) ToolCalled(tool, result string) {
	if !toolName.MatchString(tool) {
		tool = Other
	}
	m.tools.with(tool, func(tool string) { m.toolCalls.WithLabelValues(tool, result).Inc() })
}

// MCPOpen is what an MCP server's transport holds open at one moment.
type MCPOpen struct {
	// Sessions are its MCP sessions open.
	Sessions int
	// Streams are its event streams open.
	Streams int
}

// WatchMCP has every scrape report what open says the MCP server's
// transport (http, sse) holds open, as pgbus_mcp_sessions_open and
// pgbus_mcp_streams_open labelled with it. A later call for the same
// transport replaces the earlier; a nil open stops the report. open is
// called at each scrape, and must be quick and safe for concurrent use.
func (m *Metrics) WatchMCP(transport string, open func() MCPOpen) {
	m.mcpMu.Lock()
	defer m.mcpMu.Unlock()
	if open == nil {
		delete(m.mcpOpen, transport)
		return
	}
	if m.mcpOpen == nil {
		m.mcpOpen = map[string]func() MCPOpen{}
	}
	m.mcpOpen[transport] = open
}

// collectMCP sends the sessions and streams the watched MCP transports
// hold open.
func (m *Metrics) collectMCP(ch chan<- prometheus.Metric) {
	m.mcpMu.Lock()
	watched := maps.Clone(m.mcpOpen)
	m.mcpMu.Unlock()
	for _, transport := range slices.Sorted(maps.Keys(watched)) {
		open := watched[transport]()
		ch <- prometheus.MustNewConstMetric(m.sessionsOpen, prometheus.GaugeValue, float64(open.Sessions), transport)
		ch <- prometheus.MustNewConstMetric(m.streamsOpen, prometheus.GaugeValue, float64(open.Streams), transport)
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.vectors() {
		c.Describe(ch)
	}
	ch <- m.buildInfo
	ch <- m.sessionsOpen
	ch <- m.streamsOpen
	if m.opts.Ops != nil {
		for _, d := range []*prometheus.Desc{m.queueMessages, m.estimated, m.dlqMessages, m.oldestReady, m.breakerState, m.breakerHeld, m.workers, m.queueWorkers, m.queuePaused, m.queueManaged, m.databaseUp, m.schemaReady, m.gaugesAge} {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector: the process's counters, and
// the gauges read from the database (or from the last read, within
// CacheFor, or from the last successful one, within GaugesGrace of a read
// that failed), and their age.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.vectors() {
		c.Collect(ch)
	}
	ch <- prometheus.MustNewConstMetric(m.buildInfo, prometheus.GaugeValue, 1)
	m.collectMCP(ch)
	if m.opts.Ops == nil {
		return
	}
	g, ok, up, schemaReady, age := m.gauges()
	ch <- prometheus.MustNewConstMetric(m.databaseUp, prometheus.GaugeValue, flag(up))
	ch <- prometheus.MustNewConstMetric(m.schemaReady, prometheus.GaugeValue, flag(schemaReady))
	ch <- prometheus.MustNewConstMetric(m.gaugesAge, prometheus.GaugeValue, age.Seconds())
	if !ok {
		return
	}
	for _, q := range g.Queues {
		ch <- prometheus.MustNewConstMetric(m.dlqMessages, prometheus.GaugeValue, float64(q.DLQDepth), q.Queue)
		if q.Dropped {
			continue // only its DLQ is left
		}
		for _, s := range []struct {
			state string
			n     int64
		}{{"visible", q.Visible}, {"in_flight", q.InFlight}, {"waiting_retry", q.WaitingRetry}, {"scheduled", q.Scheduled}} {
			ch <- prometheus.MustNewConstMetric(m.queueMessages, prometheus.GaugeValue, float64(s.n), q.Queue, s.state)
		}
		ch <- prometheus.MustNewConstMetric(m.estimated, prometheus.GaugeValue, flag(q.Estimated), q.Queue)
		ch <- prometheus.MustNewConstMetric(m.oldestReady, prometheus.GaugeValue, q.OldestVisibleAgeSeconds, q.Queue)
		ch <- prometheus.MustNewConstMetric(m.queueWorkers, prometheus.GaugeValue, float64(g.QueueWorkers[q.Queue]), q.Queue)
		ch <- prometheus.MustNewConstMetric(m.queuePaused, prometheus.GaugeValue, flag(g.Paused[q.Queue]), q.Queue)
		ch <- prometheus.MustNewConstMetric(m.queueManaged, prometheus.GaugeValue, flag(g.Managed[q.Queue]), q.Queue)
	}
	for name, state := range g.Breakers {
		for _, s := range []string{ops.BreakerClosed, ops.BreakerOpen, ops.BreakerHalfOpen} {
			ch <- prometheus.MustNewConstMetric(m.breakerState, prometheus.GaugeValue, flag(s == state), name, s)
		}
		ch <- prometheus.MustNewConstMetric(m.breakerHeld, prometheus.GaugeValue, float64(g.BreakersHeld[name]), name)
	}
	ch <- prometheus.MustNewConstMetric(m.workers, prometheus.GaugeValue, float64(g.WorkersRunning))
}

// flag is a gauge's value for a yes or no: 1 or 0.
func flag(yes bool) float64 {
	if yes {
		return 1
	}
	return 0
}

func (m *Metrics) vectors() []prometheus.Collector {
	return []prometheus.Collector{m.finished, m.failures, m.duration, m.latency, m.transitions, m.toolCalls}
}

// gauges returns the gauges, read again when the last read is older than
// CacheFor, whether there are any to serve (ok: the last read succeeded,
// or the last successful one is younger than GaugesGrace), whether the
// database answers (up), whether its schema is ready for this process, as
// far as the last read that it answered said, and how old the gauges are:
// since the last successful read. Scrapes that come during a read wait
// for it.
func (m *Metrics) gauges() (_ ops.Gauges, ok, up, schemaReady bool, age time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readAt.IsZero() || time.Since(m.readAt) >= m.opts.CacheFor {
		m.read()
	}
	age = time.Since(cmp.Or(m.goodAt, m.born))
	if m.goodAt.IsZero() || !m.readOK && age >= m.opts.GaugesGrace {
		return ops.Gauges{}, false, m.up, !m.schemaNotReady, age
	}
	return m.good, true, m.up, !m.schemaNotReady, age
}

// read reads the gauges; m.mu is held.
func (m *Metrics) read() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, err := m.opts.Ops.Gauges(ctx)
	m.readAt, m.readOK, m.up = time.Now(), err == nil, err == nil
	if err == nil {
		m.good, m.goodAt, m.schemaNotReady = g, m.readAt, false
		m.warned.OK()
		return
	}
	if errors.Is(err, ops.ErrSchemaNotReady) || ops.ErrorKind(err) == ops.KindSchema {
		// The database answered: the pgbus schema is not ready for this
		// process (missing, older, being migrated), which the process
		// holds its calls for or the read found. A question of the locks
		// on pgbus's tables would fail for want of them, and say the
		// database down.
		m.up, m.schemaNotReady = true, true
		if m.warned.Due(time.Now()) {
			m.log.Warn("pgbus metrics: the database answers, but its pgbus schema is not ready for this process: no queue gauges until it is (pgbus_schema_ready 0), said here once a minute while it lasts",
				"err", err)
		}
		return
	}
	// A lock on one queue's table, or a busy database, holds the read:
	// the database is up all the same, and an alert on pgbus_database_up
	// would send the on-call to a server that runs.
	_, m.up = m.opts.Ops.SlowRead(context.Background())
	if m.warned.Due(time.Now()) {
		served := "none are served"
		if !m.goodAt.IsZero() && m.opts.GaugesGrace > 0 {
			served = "the last successful read's are served for " + m.opts.GaugesGrace.String() + " after it, then none"
		}
		m.log.Warn("pgbus metrics: could not read the queue gauges from the database; "+served+" until a scrape reads them (pgbus_gauges_age_seconds says how old they are; a lock on a pgbus or PGMQ table holds the read while the database answers), said here once a minute while it lasts",
			"err", err, "database_answers", m.up, "last_read", m.goodAt)
	}
}

// labelSet bounds the values of a label to the max most frequent ones
// seen; the others are counted as Other. A value gets a label of its own
// while a slot is free; once all are taken, a value seen more than twice
// as often as the least frequent labelled one (counted since each was
// first seen) takes that one's slot, and the series of the value that
// lost it are deleted (evict), so that the label never has more than
// max+1 values. The series stop rather than move: a counter cannot pass
// its count to another label. Without evict, the first max values keep
// their slots.
type labelSet struct {
	mu      sync.RWMutex
	max     int
	seen    map[string]*atomic.Int64 // labelled values: how often seen
	pending map[string]int64         // values counted as Other: how often seen
	evict   func(value string)       // deletes the series of a value that lost its slot
}

// maxPending bounds the values counted as Other that a labelSet tracks,
// per slot; the least frequent ones are forgotten first.
const maxPending = 4

func newLabelSet(max int, evict func(string)) *labelSet {
	return &labelSet{max: max, seen: map[string]*atomic.Int64{}, pending: map[string]int64{}, evict: evict}
}

// with calls fn with the label of v, counting v. No slot changes hands
// while fn runs, so fn may update the series of the label.
func (l *labelSet) with(v string, fn func(label string)) {
	if len(v) > MaxLabelBytes {
		v = Other
	}
	if v == "" || v == Other {
		fn(v)
		return
	}
	l.mu.RLock()
	if c, ok := l.seen[v]; ok {
		c.Add(1)
		fn(v)
		l.mu.RUnlock()
		return
	}
	l.mu.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	fn(l.admit(v))
}

// admit counts v, which had no slot when last looked at, and returns its
// label. l.mu is held.
func (l *labelSet) admit(v string) string {
	if c, ok := l.seen[v]; ok {
		c.Add(1)
		return v
	}
	n := l.pending[v] + 1
	if len(l.seen) < l.max {
		l.give(v, n)
		return v
	}
	if l.evict != nil {
		least, leastN := "", int64(math.MaxInt64)
		for k, c := range l.seen {
			if c := c.Load(); c < leastN || c == leastN && k < least {
				least, leastN = k, c
			}
		}
		if n > 2*leastN {
			delete(l.seen, least)
			l.evict(least)
			l.track(least, leastN)
			l.give(v, n)
			return v
		}
	}
	l.track(v, n)
	return Other
}

func (l *labelSet) give(v string, n int64) {
	delete(l.pending, v)
	c := new(atomic.Int64)
	c.Store(n)
	l.seen[v] = c
}

// track remembers how often v, counted as Other, was seen; a value not
// tracked yet takes the place of the least frequent one when there are
// too many.
func (l *labelSet) track(v string, n int64) {
	if _, ok := l.pending[v]; !ok && len(l.pending) >= maxPending*l.max {
		least, leastN := "", int64(math.MaxInt64)
		for k, c := range l.pending {
			if c < leastN || c == leastN && k < least {
				least, leastN = k, c
			}
		}
		delete(l.pending, least)
	}
	l.pending[v] = n
}

// shortCommit is the commit of the build, as pgbus version shortens it,
// marked when the tree had changes.
func shortCommit() string {
	rev, modified := buildinfo.Commit()
	rev = rev[:min(len(rev), 12)]
	if modified && rev != "" {
		rev += "-modified"
	}
	return rev
}
