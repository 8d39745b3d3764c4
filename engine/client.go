package engine

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/internal/startwait"
	"github.com/pgbus/pgbus/store"
)

// DefaultVacuumAfter is Config.VacuumAfter's default.
const DefaultVacuumAfter = 10_000

// DefaultAuditRetention is Config.AuditRetention's default: 90 days.
const DefaultAuditRetention = 90 * 24 * time.Hour

// DefaultStatsRetention is Config.StatsRetention's default: 7 days.
const DefaultStatsRetention = store.StatsRetention

// DefaultDatabaseCallTimeout is Config.DatabaseCallTimeout's default.
const DefaultDatabaseCallTimeout = 30 * time.Second

// MinDatabaseCallTimeout is the shortest Config.DatabaseCallTimeout
// NewClient takes: shorter, a busy but healthy database would be taken for
// one that does not answer.
const MinDatabaseCallTimeout = time.Second

// Config configures a Client. Zero values take the defaults given;
// NewClient refuses a duration shorter than the least its field says
// (MinInterval for the intervals that pace its loops), as a bare number
// of nanoseconds meant as seconds or days would be, and negative
// durations but where a field says what one means.
type Config struct {
	// Queues are the queues this client works.
	Queues []QueueConfig
	// Logger receives the workers' log: failures to read and write and
	// their retries, handlers that ignore their context, circuit
	// breakers opening and closing, queues dropped and made again,
	// retention's prunes. Default: none.
	Logger *slog.Logger
	// PollInterval is how often idle queues are checked for a visible
	// message when no notification arrives (a retry whose backoff ended, a
	// message sent by another PGMQ client, which does not notify): one
	// statement checks up to 100 of them, and a queue is read only once
	// it holds one. Default 1s; at least MinPollInterval.
	PollInterval time.Duration
	// NoListen turns wake-ups by LISTEN/NOTIFY off: idle queues are read
	// every PollInterval only. Without it, Run checks once per listener
	// connection that a notification reaches it, and falls back to polling,
	// with one log line, when none does (as behind PgBouncer in transaction
	// mode), checking again quietly every 5 minutes; NoListen skips that
	// check.
	NoListen bool
	// DrainTimeout is how long Run waits for running handlers, and the
	// writes of their outcomes, after its context ends. Then the handlers'
	// contexts are cancelled, and their messages given back without using
	// an attempt: visible again at once when the handler returns within a
	// second, else after the visibility timeout (the handler may still be
	// acting on it). Default 30s; at least MinDrainTimeout.
	DrainTimeout time.Duration
	// HandlerGrace is how long past its timeout a handler that ignores its
	// context is waited for before it is given up on, its attempt failed
	// (and retried or dead-lettered as any failure). Its goroutine cannot
	// be stopped: it keeps its slot of the queue's Concurrency until it
	// returns, so that stuck handlers do not pile up beyond it, and a queue
	// whose every slot is stuck so stops taking work, which health
	// reports. The outcome of its message waits until it returns, the
	// message kept hidden meanwhile, so that neither its retry nor a retry
	// out of the DLQ runs beside it, and a success it returns then is kept:
	// the job is done, late (a stop waits for it only until its drain
	// timeout: a retry then waits the visibility timeout). Default 5s; at
	// least MinHandlerGrace.
	HandlerGrace time.Duration
	// VisibilityHeartbeat is how often the visibility timeout of running
	// messages is pushed back. Default, and most: a third of the queue's
	// timeout, as it is now (a timeout changed while jobs run applies to
	// them too).
	VisibilityHeartbeat time.Duration
	// ProcessHeartbeat is how often the process registry row is refreshed.
	// Default 10s. The registry keeps it, so that pgbus workers and health
	// count the process stale only once it missed three beats (or the
	// reader's ops.Options.StaleAfter passed, when that is longer).
	ProcessHeartbeat time.Duration
	// SettingsRefresh is how often queue settings (pause included) are
	// re-read. Default 2s.
	SettingsRefresh time.Duration
	// StatsFlush is how often per-minute counters are written. Default 5s.
	StatsFlush time.Duration
	// DatabaseCallTimeout bounds each call the workers' loops make to the
	// database: one read of a batch, one extension of the running
	// messages' visibility timeout, one heartbeat, one refresh of the
	// settings, one statement of the retention pass, the listener's
	// connect and its checks. A connection that stops answering without
	// being closed (a failover behind a proxy or load balancer, a frozen
	// server, a network path that drops everything) would otherwise hold
	// the loop until TCP gives up, minutes later, or for ever; past the
	// bound the connection is closed, the call fails as the database not
	// answering, and the next try takes a new connection. The first call
	// so given up also drops the store's other connections
	// (store.Store.DropFrozenConnections), which froze with it, once for
	// all the calls under way then, the operations layer's over the same
	// store included: a store shared with the program's other code
	// has its idle connections closed, and its busy ones as they are
	// released. Default DefaultDatabaseCallTimeout (30s); at least
	// MinDatabaseCallTimeout.
	DatabaseCallTimeout time.Duration
	// RetentionInterval is how often this process offers to prune old
	// archives (one process at a time does it), the first time as Run
	// starts, so that processes that never run a whole interval (run from
	// cron, restarted often) prune too. Default 10m; negative: never.
	RetentionInterval time.Duration
	// AuditRetention is how long the audit log (pgbus.audit_log: the
	// operations of the CLI, the MCP tools and the dashboard) keeps an
	// entry; older ones go in the retention pass, a few thousand per
	// statement. Default DefaultAuditRetention (90 days); at least
	// MinAuditRetention; negative: for ever. The process that wins the retention election prunes with its
	// own setting, so give every process on a database the same.
	AuditRetention time.Duration
	// StatsRetention is how long the per-minute counters of outcomes
	// (pgbus.stats_minute: the last hour's figures and the dashboard's
	// charts, which read at most the last 24 hours) are kept; older ones
	// go in the retention pass, in batches. Default DefaultStatsRetention
	// (7 days); at least MinStatsRetention; negative: for ever. As with
	// AuditRetention, the process that wins the election prunes with its
	// own setting.
	StatsRetention time.Duration
	// VacuumAfter is how many messages of a queue this process settles
	// (archives, retries, dead-letters...) before it vacuums the queue's
	// table; when the queue goes quiet after as many, the vacuum also
	// gives the table's space back. Default DefaultVacuumAfter; negative:
	// never, leaving it to autovacuum.
	VacuumAfter int
	// Rand returns uniform numbers in [0, 1) for backoff jitter. Tests pass
	// a fixed source. Default math/rand/v2.
	Rand func() float64
	// Observers are told of every job's start and end, in this order: for
	// metrics, traces and logs. None by default.
	Observers []Observer

	// heartbeatHeld, when set and reporting true, makes the visibility
	// heartbeat skip its extensions, so that a test can tell what else
	// keeps running jobs' messages invisible. Set by the tests only.
	heartbeatHeld func() bool
	// heartbeatTurn, when set, is called at each turn of a queue's
	// visibility heartbeat, parked when the turn waits for a message to
	// be held rather than for the time of an extension. Set by the tests
	// only.
	heartbeatTurn func(parked bool)
}

// QueueConfig is one queue a client works.
type QueueConfig struct {
	// Name is the queue as it was created (ops.Service.QueueCreate); a
	// queue with priority levels is named by its own name, and its
	// workers read each level.
	Name string
	// Concurrency is how many of its messages run at once. Default 10.
	Concurrency int
}

// MaxConcurrency bounds QueueConfig.Concurrency.
const MaxConcurrency = 10_000

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PollInterval, time.Second)
	def(&c.DrainTimeout, 30*time.Second)
	def(&c.HandlerGrace, 5*time.Second)
	def(&c.ProcessHeartbeat, 10*time.Second)
	def(&c.SettingsRefresh, 2*time.Second)
	def(&c.StatsFlush, 5*time.Second)
	if c.DatabaseCallTimeout == 0 {
		c.DatabaseCallTimeout = DefaultDatabaseCallTimeout
	}
	if c.RetentionInterval == 0 {
		c.RetentionInterval = 10 * time.Minute
	}
	if c.AuditRetention == 0 {
		c.AuditRetention = DefaultAuditRetention
	}
	if c.StatsRetention == 0 {
		c.StatsRetention = DefaultStatsRetention
	}
	if c.VacuumAfter == 0 {
		c.VacuumAfter = DefaultVacuumAfter
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	// A copy: the caller's slice is neither changed by the defaults nor,
	// changed later (reused for another client), changes this one.
	c.Queues = slices.Clone(c.Queues)
	for i := range c.Queues {
		if c.Queues[i].Concurrency == 0 {
			c.Queues[i].Concurrency = 10
		}
	}
	return c
}

// checkNegative refuses a negative duration where none has a meaning
// (RetentionInterval, AuditRetention, StatsRetention and VacuumAfter take
// one for never): the defaults would take its place without a word.
func (c Config) checkNegative() error {
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"PollInterval", c.PollInterval}, {"DrainTimeout", c.DrainTimeout}, {"HandlerGrace", c.HandlerGrace},
		{"VisibilityHeartbeat", c.VisibilityHeartbeat}, {"ProcessHeartbeat", c.ProcessHeartbeat},
		{"SettingsRefresh", c.SettingsRefresh}, {"StatsFlush", c.StatsFlush}, {"DatabaseCallTimeout", c.DatabaseCallTimeout},
	} {
		if d.value < 0 {
			return fmt.Errorf("%w: Config.%s %s is negative: give a positive duration, or leave it zero for the default", store.ErrInvalid, d.field, d.value)
		}
	}
	return nil
}

// MinInterval is the shortest VisibilityHeartbeat, ProcessHeartbeat,
// SettingsRefresh, StatsFlush and RetentionInterval NewClient takes.
const MinInterval = time.Millisecond

// The shortest values NewClient takes of the durations with bounds of
// their own, the least the configuration file takes of the same settings
// where it has them. A Duration is nanoseconds: a bare number meant as
// seconds or days (DrainTimeout: 30, AuditRetention: 90) is far below
// each of them.
const (
	// MinPollInterval is the shortest Config.PollInterval, as the
	// configuration file's worker.poll_interval.
	MinPollInterval = 10 * time.Millisecond
	// MinDrainTimeout is the shortest Config.DrainTimeout, as the
	// configuration file's worker.drain_timeout.
	MinDrainTimeout = time.Millisecond
	// MinHandlerGrace is the shortest Config.HandlerGrace.
	MinHandlerGrace = time.Millisecond
	// MinAuditRetention is the shortest Config.AuditRetention but a
	// negative one (for ever), as the configuration file's
	// audit_retention.
	MinAuditRetention = time.Minute
	// MinStatsRetention is the shortest Config.StatsRetention but a
	// negative one (for ever), as the configuration file's
	// stats_retention: the dashboard's charts read the last 24 hours.
	MinStatsRetention = 24 * time.Hour
)

func (c Config) validate() error {
	// A Duration is nanoseconds, so PollInterval: 1 means 1ns, not a
	// second: the loops these pace would query the database without
	// pause.
	for _, d := range []struct {
		field    string
		value    time.Duration
		min      time.Duration
		why, bad string // what a shorter one does; a time.Duration and the bare number it is not
	}{
		{"PollInterval", c.PollInterval, MinPollInterval, "which would query the database without pause", "2 * time.Second (a bare 2 is 2ns)"},
		{"VisibilityHeartbeat", c.VisibilityHeartbeat, MinInterval, "which would query the database without pause", "2 * time.Second (a bare 2 is 2ns)"},
		{"ProcessHeartbeat", c.ProcessHeartbeat, MinInterval, "which would query the database without pause", "10 * time.Second (a bare 10 is 10ns)"},
		{"SettingsRefresh", c.SettingsRefresh, MinInterval, "which would query the database without pause", "2 * time.Second (a bare 2 is 2ns)"},
		{"StatsFlush", c.StatsFlush, MinInterval, "which would query the database without pause", "5 * time.Second (a bare 5 is 5ns)"},
		{"RetentionInterval", c.RetentionInterval, MinInterval, "which would query the database without pause", "10 * time.Minute (a bare 600 is 600ns)"},
		{"DrainTimeout", c.DrainTimeout, MinDrainTimeout, "so a stop would cancel the running handlers at once", "30 * time.Second (a bare 30 is 30ns)"},
		{"HandlerGrace", c.HandlerGrace, MinHandlerGrace, "so a handler past its timeout would be failed at once, while it may still be finishing", "5 * time.Second (a bare 5 is 5ns)"},
		{"AuditRetention", c.AuditRetention, MinAuditRetention, "so the retention pass would delete nearly every entry of the audit log every operator of this database shares", "90 * 24 * time.Hour (a bare 90 is 90ns), a negative one to keep every entry"},
		{"StatsRetention", c.StatsRetention, MinStatsRetention, "so the retention pass would delete counters the dashboard's charts of the last 24 hours show", "7 * 24 * time.Hour (a bare 7 is 7ns), a negative one to keep every counter"},
	} {
		if d.value > 0 && d.value < d.min {
			return fmt.Errorf("%w: Config.%s %s is shorter than %s, %s: give a time.Duration such as %s, or leave it zero for the default",
				store.ErrInvalid, d.field, d.value, d.min, d.why, d.bad)
		}
	}
	if c.DatabaseCallTimeout < MinDatabaseCallTimeout {
		return fmt.Errorf("%w: Config.DatabaseCallTimeout %s is shorter than %s, which a busy but healthy database may take: give for example 30 * time.Second, or leave it zero for the default %s",
			store.ErrInvalid, c.DatabaseCallTimeout, MinDatabaseCallTimeout, DefaultDatabaseCallTimeout)
	}
	seen := map[string]bool{}
	for _, q := range c.Queues {
		if err := store.ValidateQueueName(q.Name); err != nil {
			return err
		}
		if seen[q.Name] {
			return fmt.Errorf("%w: queue %q is configured twice; give it once with the concurrency you want", store.ErrInvalid, q.Name)
		}
		seen[q.Name] = true
		if q.Concurrency < 1 || q.Concurrency > MaxConcurrency {
			return fmt.Errorf("%w: queue %q: concurrency %d is out of range 1..%d", store.ErrInvalid, q.Name, q.Concurrency, MaxConcurrency)
		}
	}
	return nil
}

// Client sends messages and, in Run, works queues with registered handlers.
// Register handlers before Run: Handle and HandleQueue panic while Run
// runs. Make one with NewClient: a zero Client, or a nil *Client, refuses
// its sends, Run and Validate with store.ErrInvalid.
type Client struct {
	store *store.Store
	cfg   Config
	log   *slog.Logger
	id    string

	mu       sync.RWMutex
	kinds    map[string]handler
	defaults map[string]handler // per logical queue
	// misregistered says what is wrong with the first registration Run
	// refuses: one that replaced another, or one given several options.
	misregistered string

	settings atomic.Pointer[map[string]store.QueueSettings]
	// settingsMu orders the stores of settings: a read begun before
	// another that stored first (a worker's when its dropped queue is
	// back, beside the periodic one) does not store what it read after
	// it. settingsRead counts the reads begun, settingsStored is the
	// number of the last one stored.
	settingsMu     sync.Mutex
	settingsRead   atomic.Int64
	settingsStored int64
	physical       map[string][]string // logical queue -> physical queues, set by Run
	// breakerUsers are the queues and kinds whose handlers use each
	// breaker, set by Run and said again at each heartbeat.
	breakerUsers map[string][]store.BreakerUser
	// sendQueues caches the layout (sendLayout) of send targets; priority
	// levels are fixed when a queue is created, but a queue may be dropped
	// and made again with others.
	sendQueues sync.Map
	stats      *statsCollector
	observers  observers
	running    atomic.Bool
	// clockWarn is what the log was last told of this host's clock being
	// far from the database server's (syncClock).
	clockWarn clockWarning
	// auditKept is set once retention said that its role may not prune
	// the audit log, so that it says so once.
	auditKept atomic.Bool
	// outage says once for all the loops that the database cannot be
	// reached, and when it answers again.
	outage outage
	// stuck are the handlers given up on that still run, which each
	// heartbeat reports.
	stuck stuckHandlers
	// schemaLog paces the warning that pgbus's schema is gone
	// (schemaGone).
	schemaLog quietlog.Log
	// idle are the workers waiting for work in their queues.
	idle idleQueues
	// workers are Run's queue workers, by logical queue, set before its
	// loops start.
	workers map[string]*queueWorker
	// layouts counts the workers' changes of layout (relayout), for the
	// listener to map tables to workers again.
	layouts atomic.Int64
}

// NewClient makes a client over a migrated store.
func NewClient(st *store.Store, cfg Config) (*Client, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: NewClient needs a store: open one with store.Open", store.ErrInvalid)
	}
	if st.Pool() == nil {
		return nil, fmt.Errorf("%w: NewClient needs a store with a pool, and this one was made by store.New with a nil pool (or is a zero store.Store): open one with store.Open, or pass store.New the pool pgxpool.NewWithConfig returned", store.ErrInvalid)
	}
	if err := cfg.checkNegative(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		store:    st,
		cfg:      cfg,
		log:      cfg.Logger,
		id:       processID(),
		kinds:    map[string]handler{},
		defaults: map[string]handler{},
		stats:    newStatsCollector(),
	}
	c.outage.log = cfg.Logger
	c.outage.renew = st.RenewReadOnlyConnections
	c.outage.ended = make(chan struct{}, 1)
	c.observers.log = cfg.Logger
	for _, o := range cfg.Observers {
		if o != nil {
			c.observers.list = append(c.observers.list, o)
		}
	}
	empty := map[string]store.QueueSettings{}
	c.settings.Store(&empty)
	return c, nil
}

func processID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = crand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// ID identifies this client's process in the worker registry.
func (c *Client) ID() string {
	if c == nil {
		return ""
	}
	return c.id
}

// made refuses, as store.ErrInvalid, a call fn on a Client NewClient did
// not make (a nil *Client, a zero engine.Client), which would otherwise
// panic on its missing store.
func (c *Client) made(fn string) error {
	if c == nil || c.store == nil {
		return fmt.Errorf("%w: %s on a Client that NewClient did not make (a nil *Client, or a zero engine.Client): make it with engine.NewClient(store, cfg)", store.ErrInvalid, fn)
	}
	return nil
}

// registrations makes the maps of handlers of a zero Client, whose
// registrations Run then refuses with the Client itself (made).
func (c *Client) registrations() {
	if c.kinds == nil {
		c.kinds = map[string]handler{}
	}
	if c.defaults == nil {
		c.defaults = map[string]handler{}
	}
}

// Handle registers the handler of a kind (the pgbus_kind header), on every
// queue this client works. A kind has one handler: Run and Validate refuse
// a kind registered twice, and one longer than MaxKindBytes, which Send
// refuses.
//
// Handle panics while Run runs: Run checks the handlers, and makes the
// circuit breakers they name, only as it starts, so a handler added later
// would run unchecked and its breaker would be missing from the list of
// breakers. Register every handler before Run, or stop Run (end its
// context and wait for it to return) and run it again.
func (c *Client) Handle(kind string, fn HandlerFunc, opts ...HandlerOptions) {
	if c == nil {
		return // Run and the sends of a nil *Client refuse it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registrations()
	c.refuseWhileRunning("Handle", fmt.Sprintf("kind %q", kind))
	if _, ok := c.kinds[kind]; ok && c.misregistered == "" {
		c.misregistered = fmt.Sprintf("kind %q is registered twice with Handle"+replaced, kind)
	}
	c.severalOptions(fmt.Sprintf("kind %q", kind), opts)
	c.kinds[kind] = handler{fn: fn, opts: firstOr(opts).clone()}
}

// HandleQueue registers the handler for messages of a queue whose kind has
// no handler of its own (messages without pgbus_kind included). A queue has
// one: Run and Validate refuse a queue registered twice.
//
// HandleQueue panics while Run runs, as Handle does.
func (c *Client) HandleQueue(queue string, fn HandlerFunc, opts ...HandlerOptions) {
	if c == nil {
		return // Run and the sends of a nil *Client refuse it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registrations()
	c.refuseWhileRunning("HandleQueue", fmt.Sprintf("queue %q", queue))
	if _, ok := c.defaults[queue]; ok && c.misregistered == "" {
		c.misregistered = fmt.Sprintf("queue %q is registered twice with HandleQueue"+replaced, queue)
	}
	c.severalOptions(fmt.Sprintf("queue %q", queue), opts)
	c.defaults[queue] = handler{fn: fn, opts: firstOr(opts).clone()}
}

// refuseWhileRunning panics when Run has started: a registration it cannot
// check is a programming error no return value would surface. Run sets
// running before it reads the handlers under mu, so a registration either
// panics or is seen by Run's checks.
func (c *Client) refuseWhileRunning(fn, what string) {
	if c.running.Load() {
		panic(fmt.Sprintf("engine: %s for %s while the client runs: Run checks handlers and makes their circuit breakers only as it starts; register every handler before Run, or stop Run and run it again", fn, what))
	}
}

// replaced ends the refusal of a registration made twice.
const replaced = ", and the last registration replaced the first: register each once, with the one handler its messages should run"

// severalOptions notes, for Run to refuse, a registration given more than
// one HandlerOptions: only the first would apply.
func (c *Client) severalOptions(what string, opts []HandlerOptions) {
	if len(opts) > 1 && c.misregistered == "" {
		c.misregistered = fmt.Sprintf("%s is registered with %d HandlerOptions; pass one, with the fields of all of them", what, len(opts))
	}
}

func firstOr(opts []HandlerOptions) HandlerOptions {
	if len(opts) > 0 {
		return opts[0]
	}
	return HandlerOptions{}
}

func (c *Client) handlerFor(queue, kind string) (handler, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if h, ok := c.kinds[kind]; ok && kind != "" {
		return h, true
	}
	h, ok := c.defaults[queue]
	return h, ok
}

func (c *Client) settingsFor(queue string) store.QueueSettings {
	if s, ok := (*c.settings.Load())[queue]; ok {
		return s
	}
	return store.DefaultQueueSettings(queue)
}

func (c *Client) refreshSettings(ctx context.Context) error {
	n := c.settingsRead.Add(1)
	var all map[string]store.QueueSettings
	err := c.bounded(ctx, func(ctx context.Context) (err error) {
		all, err = c.store.AllQueueSettings(ctx)
		return err
	})
	if err != nil {
		return err
	}
	c.settingsMu.Lock()
	if n > c.settingsStored {
		c.settingsStored = n
		c.settings.Store(&all)
	}
	c.settingsMu.Unlock()
	return c.checkLayout(ctx)
}

// checkLayout compares the priority levels of the queues this client
// sends to and works with those they have now. A queue dropped and made
// again with other levels between two reads of its workers goes unseen by
// them when the levels they read are there again (made with more): its
// worker is told to read its layout again. The send targets are looked up
// again.
func (c *Client) checkLayout(ctx context.Context) error {
	var levels map[string]int
	err := c.bounded(ctx, func(ctx context.Context) (err error) {
		levels, err = c.store.QueueLevels(ctx)
		return err
	})
	if err != nil {
		return err
	}
	c.sendQueues.Range(func(queue, layout any) bool {
		if n, ok := levels[queue.(string)]; ok && max(n, 1) != len(layout.(sendLayout).physical) {
			c.sendQueues.Delete(queue)
		}
		return true
	})
	for queue, w := range c.workers {
		if n, ok := levels[queue]; ok && max(n, 1) != len(w.tables()) {
			w.layoutStale.Store(true)
			w.poke()
		}
	}
	return nil
}

// ErrAlreadyRunning is returned by a second concurrent Run.
var ErrAlreadyRunning = errors.New("engine: client is already running: wait for its Run to return before calling Run again, or make another Client for the same store")

// Run works the configured queues until ctx ends, then stops fetching (a
// read under way finishes, and what it claimed is given back unrun, its
// attempt returned), waits up to DrainTimeout for running handlers and the
// writes of their outcomes, and returns. Messages still running, or whose outcomes are not written,
// after that (and a few seconds' grace for writes under way) reappear after
// their visibility timeout.
// A ctx that ends while Run starts is a stop like any other: Run returns nil.
// A database whose schema lacks this pgbus's migrations stops Run before
// anything is written, with an error wrapping store.ErrSchemaOld (or
// store.ErrSchemaMissing): call Store.Migrate first. A database that does
// not answer while Run starts (down or restarting, its pooler restarting,
// a connection cut) is waited for, as the workers wait one out once
// running: Run tries again every few seconds, logging a warning once,
// until it answers or ctx ends; errors no wait mends (a privilege the
// role lacks, a queue or schema missing, a bad configuration) end Run at
// once. A server that refuses new connections for having as many as it
// allows (SQLSTATE 53300) is waited for, up to a minute, before Run fails
// to start with an error wrapping store.ErrUnavailable; a database that
// does not answer never ends Run: its start, as its loops, waits it out
// until ctx ends. A start that fails is recorded in the process registry
// with its error, where health reads it (workers_stopped on the queues). A
// Store closed while Run runs (Store.Close), or the pool passed to
// store.New closed by its owner, stops it as ctx would, and Run returns
// an error wrapping store.ErrClosed that says which; the outcomes of jobs
// finished after that are not written (their messages run again after
// their visibility timeout). A nil ctx is refused
// with store.ErrInvalid.
func (c *Client) Run(ctx context.Context) error {
	if err := c.made("Run"); err != nil {
		return err
	}
	if ctx == nil {
		// Refused here, not as a nil dereference deep in the driver.
		return fmt.Errorf("%w: Run needs a context, and stops when it ends: pass one from context.WithCancel(context.Background())", store.ErrInvalid)
	}
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer c.running.Store(false)
	if err := c.checkQueuesGiven(); err != nil {
		return err
	}
	wait := startwait.New(c.log, c.lockHolders, c.store.HasConnected)
	for _, step := range []func(context.Context) error{
		c.checkSchema, c.checkQueues, func(context.Context) error { return c.checkHandlers() }, c.refreshSettings, c.ensureBreakers, c.register,
	} {
		// Each step is bounded by the database call timeout: a pooler
		// that takes the connection while its server is down (PgBouncer
		// holds it up to its query_wait_timeout) or a frozen path would
		// hold the start silently; given up, the step is an outage that
		// the wait says and waits out.
		bounded := func(ctx context.Context) error { return c.bounded(ctx, step) }
		if err := wait.Do(ctx, bounded); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil // stopped while starting: a stop like any other
			}
			err = c.limitErr(err)
			c.recordStop(ctx, err)
			return err
		}
	}
	return c.runWorkers(ctx)
}

// recordStop records in the process registry that this client's start
// failed on err (store.StopWorkerOnError), so that the health of every
// process says its queues' workers stopped on an error, not only the
// caller of Run: within the database call timeout, and said at debug
// level when it cannot be written (the cause may forbid it too). Nothing
// is written where Run refuses to write at all: a schema this pgbus
// cannot work on, a search_path that shadows what its statements call,
// session settings its statements are not written for, a closed store.
func (c *Client) recordStop(ctx context.Context, err error) {
	if errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrSchemaOld) || errors.Is(err, store.ErrSchemaMissing) ||
		errors.Is(err, store.ErrShadowingSearchPath) || errors.Is(err, store.ErrSessionSettings) {
		return
	}
	werr := c.bounded(context.WithoutCancel(ctx), func(ctx context.Context) error {
		return c.store.StopWorkerOnError(ctx, c.process(), err.Error())
	})
	if werr != nil {
		c.log.Debug("pgbus: could not record in the worker registry that starting failed", "err", werr)
	}
}

// checkSchema stops Run before anything is written when the database's
// schema lacks migrations of this pgbus, as when a program built with it is
// deployed before the database an older pgbus migrated is migrated: the
// workers' statements would fail on what is missing, one by one, in errors
// that say neither why nor what to do. A role that may not read the
// schema's records is left to the steps after, which say what it lacks.
//
// A schema a newer pgbus migrated is worked on, and the log warns once
// that this pgbus is older than it (Store.LogNewer, once for the store):
// a program that opens its store itself is told too.
func (c *Client) checkSchema(ctx context.Context) error {
	st, err := c.store.CheckSchema(ctx)
	if err == nil {
		c.store.LogNewer(st, c.log)
	}
	if errors.Is(err, store.ErrSchemaOld) || errors.Is(err, store.ErrSchemaMissing) {
		return fmt.Errorf("engine: %w: call Store.Migrate before Run", err)
	}
	if err != nil && !errors.Is(err, store.ErrPermission) {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// ensureBreakers creates the circuit breakers that handlers name and
// records which queues and kinds use them, for the list of breakers.
func (c *Client) ensureBreakers(ctx context.Context) error {
	breakers, users, err := c.breakerUses()
	if err != nil {
		return err
	}
	c.breakerUsers = users
	for name, b := range breakers {
		c.warnOtherSettings(ctx, b)
		if err := c.createBreaker(ctx, b, users[name]); err != nil {
			return err
		}
	}
	ran, err := c.store.ForgetOtherBreakerUsers(ctx, c.breakerUseList())
	for name, n := range ran {
		c.log.Info("pgbus: jobs held by a circuit breaker that this process's handlers no longer use run now",
			"breaker", name, "jobs", n)
	}
	return err
}

// breakerUseList is the breaker, or none, of each queue and kind this
// client's handlers serve, as breakerUses counts them.
func (c *Client) breakerUseList() []store.BreakerUse {
	c.mu.RLock()
	defer c.mu.RUnlock()
	name := func(h handler) string {
		if h.opts.Breaker == nil {
			return ""
		}
		return h.opts.Breaker.Name
	}
	var uses []store.BreakerUse
	for _, q := range c.cfg.Queues {
		for kind, h := range c.kinds {
			uses = append(uses, store.BreakerUse{Queue: q.Name, Kind: kind, Breaker: name(h)})
		}
	}
	for queue, h := range c.defaults {
		uses = append(uses, store.BreakerUse{Queue: queue, Breaker: name(h)})
	}
	return uses
}

// warnOtherSettings logs that breaker b exists with other settings, which
// this process's replace: processes that share a breaker and configure it
// differently take turns at its settings, each one's start setting its
// own, in silence. A failed read says nothing: the create reports it.
func (c *Client) warnOtherSettings(ctx context.Context, b store.BreakerConfig) {
	had, err := c.store.ListBreakers(ctx, b.Name)
	if err != nil || len(had) != 1 {
		return
	}
	prev := store.BreakerConfig{Name: b.Name, FailureThreshold: had[0].FailureThreshold,
		CoolOff: time.Duration(had[0].CoolOffSeconds * float64(time.Second)), MaxCoolOff: time.Duration(had[0].MaxCoolOffSeconds * float64(time.Second))}
	if prev.FailureThreshold == b.FailureThreshold && prev.CoolOff.Round(time.Millisecond) == b.CoolOff.Round(time.Millisecond) &&
		prev.MaxCoolOff.Round(time.Millisecond) == b.MaxCoolOff.Round(time.Millisecond) {
		return
	}
	c.log.Warn("pgbus: circuit breaker exists with other settings, which this process's replace; processes that share a breaker should give it the same settings, or use breakers of different names",
		"breaker", b.Name, "had", breakerText(prev), "now", breakerText(b))
}

// ensureBreaker makes the breaker name of this client's handlers again,
// with its users, after it was deleted.
func (c *Client) ensureBreaker(ctx context.Context, name string) error {
	breakers, users, err := c.breakerUses()
	if err != nil {
		return err
	}
	b, ok := breakers[name]
	if !ok {
		return fmt.Errorf("%w: circuit breaker %q is not one of this process's handlers'", store.ErrNotFound, name)
	}
	return c.createBreaker(ctx, b, users[name])
}

func (c *Client) createBreaker(ctx context.Context, b store.BreakerConfig, users []store.BreakerUser) error {
	if err := c.store.EnsureBreaker(ctx, b); err != nil {
		return err
	}
	return c.store.RecordBreakerUsers(ctx, b.Name, users)
}

// userList is the breaker users of a handler of kind on queues.
func userList(queues []string, kind string) []store.BreakerUser {
	out := make([]store.BreakerUser, len(queues))
	for i, q := range queues {
		out[i] = store.BreakerUser{Queue: q, Kind: kind}
	}
	return out
}

// usersText names the queues, and kinds, of a breaker's users.
func usersText(users []store.BreakerUser) string {
	names := make([]string, 0, len(users))
	for _, u := range users {
		if u.Kind == "" {
			names = append(names, "queue "+u.Queue)
		} else {
			names = append(names, fmt.Sprintf("kind %s on queue %s", u.Kind, u.Queue))
		}
	}
	return strings.Join(names, ", ")
}

// breakerUses returns the breakers the handlers name, by name, and the
// queues and kinds whose handler names each: a kind's handler serves it on
// every queue this client works; a queue's default handler (kind "") every
// kind without a handler of its own. Handlers that name one breaker with
// different settings are an error: which settings won would depend on the
// order of a map, and on which process started last.
func (c *Client) breakerUses() (map[string]store.BreakerConfig, map[string][]store.BreakerUser, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	breakers := map[string]store.BreakerConfig{}
	users := map[string][]store.BreakerUser{}
	var conflict error
	use := func(h handler, queues []string, kind string) {
		b := h.opts.Breaker
		if b == nil {
			return
		}
		if prev, ok := breakers[b.Name]; ok && prev != *b && conflict == nil {
			conflict = fmt.Errorf("%w: circuit breaker %q is configured twice with different settings (%s for %s, %s for %s): give its handlers the same breaker settings, or breakers of different names",
				store.ErrInvalid, b.Name, breakerText(prev), usersText(users[b.Name]), breakerText(*b), usersText(userList(queues, kind)))
		}
		breakers[b.Name] = *b
		for _, q := range queues {
			users[b.Name] = append(users[b.Name], store.BreakerUser{Queue: q, Kind: kind})
		}
	}
	worked := make([]string, len(c.cfg.Queues))
	for i, q := range c.cfg.Queues {
		worked[i] = q.Name
	}
	// In the order of their names, so that a conflict is told in the same
	// words at every start.
	for _, kind := range slices.Sorted(maps.Keys(c.kinds)) {
		use(c.kinds[kind], worked, kind)
	}
	for _, queue := range slices.Sorted(maps.Keys(c.defaults)) {
		use(c.defaults[queue], []string{queue}, "")
	}
	return breakers, users, conflict
}

func breakerText(b store.BreakerConfig) string {
	return fmt.Sprintf("failure threshold %d, cool-off %s up to %s", b.FailureThreshold, b.CoolOff, b.MaxCoolOff)
}

func (c *Client) checkQueues(ctx context.Context) error {
	queues, err := c.store.ListQueues(ctx)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, q := range queues {
		have[q.Name] = true
	}
	names := make([]string, len(c.cfg.Queues))
	for i, q := range c.cfg.Queues {
		names[i] = q.Name
	}
	layouts, err := c.store.QueueLayouts(ctx, names)
	if err != nil {
		return err
	}
	c.physical = map[string][]string{}
	for _, q := range c.cfg.Queues {
		// A level worked alone would read it with the defaults' settings
		// and dead-letter into a DLQ of its own, made for it below, which
		// no view of its queue shows.
		layout := layouts[q.Name]
		if base, level := layout.LevelOf, layout.Level; base != "" {
			return fmt.Errorf("%w: queue %q is priority level %d of queue %q, not a queue of its own: work queue %q instead, whose workers read each of its levels, level 0 first",
				store.ErrInvalid, q.Name, level, base, base)
		}
		physical := layout.Physical
		// A queue another PGMQ client made has no DLQ: make it, and leave
		// the queue's settings at the defaults. So is one whose DLQ was
		// dropped by hand, as a running worker would.
		if dlq := store.DLQName(q.Name); !have[dlq] && allIn(physical, have) {
			if err := c.store.CreateDLQ(ctx, q.Name); err != nil {
				return err
			}
			have[dlq] = true
		}
		for _, name := range append(physical, store.DLQName(q.Name)) {
			switch {
			case have[name]:
			case name == q.Name:
				return fmt.Errorf("%w: queue %q does not exist; create it first (ops.Service.QueueCreate or Store.CreateQueue)", store.ErrNotFound, q.Name)
			default:
				return fmt.Errorf("%w: queue %q is missing its part %s (its PGMQ queue pgmq.q_%s was dropped); create the queue again (ops.Service.QueueCreate), which mends it", store.ErrNotFound, q.Name, name, name)
			}
		}
		c.physical[q.Name] = physical
	}
	return nil
}

// allIn reports whether every name is in have.
func allIn(names []string, have map[string]bool) bool {
	for _, n := range names {
		if !have[n] {
			return false
		}
	}
	return true
}

func (c *Client) runWorkers(parent context.Context) error {
	// A Store closed under Run, or its pool closed by its owner, ends it
	// as its context would: every statement would fail from then on.
	ctx, stop := context.WithCancel(parent)
	defer stop()
	var storeClosed atomic.Bool
	go func() {
		select {
		case <-c.store.Closed():
			storeClosed.Store(true)
			stop()
		case <-ctx.Done():
		}
	}()
	// Jobs get a context that outlives ctx by the drain timeout, and the
	// writes of their outcomes one that outlives it by finalWriteGrace more.
	jobBase, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	writeBase, stopWrites := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWrites()
	workers := make(map[string]*queueWorker, len(c.cfg.Queues))
	for _, qc := range c.cfg.Queues {
		workers[qc.Name] = newQueueWorker(c, qc, c.physical[qc.Name], jobBase, writeBase)
	}
	c.workers = workers
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx) })
	}
	var bg sync.WaitGroup
	bgCtx, stopBG := context.WithCancel(ctx)
	bg.Go(func() { c.listen(bgCtx, workers) })
	bg.Go(func() { c.checkIdle(bgCtx) })
	bg.Go(func() { c.every(bgCtx, c.cfg.SettingsRefresh, c.refreshSettings, nil) })
	bg.Go(func() { c.every(bgCtx, c.cfg.ProcessHeartbeat, c.heartbeat, c.outage.ended) })
	bg.Go(func() { c.every(bgCtx, c.cfg.StatsFlush, c.flushStats, nil) })
	if c.cfg.RetentionInterval > 0 {
		bg.Go(func() {
			c.try(bgCtx, c.retention)
			c.every(bgCtx, c.cfg.RetentionInterval, c.retention, nil)
		})
	}

	<-ctx.Done()
	c.drain(workers, &wg, hardStop, stopWrites)
	stopBG()
	bg.Wait()
	c.workers = nil
	if storeClosed.Load() {
		if c.store.PoolClosedOutside() {
			return fmt.Errorf("%w: the pool this Store wraps was closed while Run was running: it stopped; the jobs running then were given back to their queues by their visibility timeout. Close the pool only after Run returns", store.ErrClosed)
		}
		return fmt.Errorf("%w while Run was running: it stopped; the jobs running then were given back to their queues by their visibility timeout. Close the Store only after Run returns", store.ErrClosed)
	}
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.flushStats(final); err != nil {
		c.log.Warn("pgbus: final stats flush failed", "err", err)
	}
	if err := c.store.StopWorker(final, c.id); err != nil {
		c.log.Warn("pgbus: could not mark worker stopped", "err", err)
	}
	return nil
}

// finalWriteGrace is how long past the drain timeout the writes of
// outcomes under way then, or made by the last handlers, may take: a
// database that does not answer must not hold the stop.
const finalWriteGrace = 5 * time.Second

// drain waits up to DrainTimeout for the workers: their running handlers
// and the writes of their outcomes. Then it cancels the handlers still
// running, and the writes still being retried (the database unreachable);
// the cut-off jobs are given back (see giveBack).
func (c *Client) drain(workers map[string]*queueWorker, wg *sync.WaitGroup, hardStop, stopWrites context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	waiting := func() (jobs, outcomes int) {
		for _, w := range workers {
			jobs += w.running()
			outcomes += int(w.unwritten.Load())
		}
		return jobs, outcomes
	}
	// Said at once: a stop that waits in silence looks hung.
	switch jobs, outcomes := waiting(); {
	case jobs > 0:
		c.log.Info("pgbus: stopping; waiting for the running jobs, and the outcomes of finished ones to be written, up to the drain timeout",
			"running", jobs, "unwritten_outcomes", outcomes, "drain_timeout", c.cfg.DrainTimeout.String())
	case outcomes > 0:
		c.log.Info("pgbus: stopping; no job runs, waiting for the outcomes of finished jobs to be written, up to the drain timeout",
			"unwritten_outcomes", outcomes, "drain_timeout", c.cfg.DrainTimeout.String())
	}
	timeout := time.NewTimer(c.cfg.DrainTimeout)
	defer timeout.Stop()
	select {
	case <-done:
		return
	case <-timeout.C:
	}
	if jobs, outcomes := waiting(); jobs > 0 {
		c.log.Warn("pgbus: drain timeout reached; the running jobs are cancelled and their messages given back without using an attempt: "+
			"visible again at once, or after their visibility timeout if their handler does not return within a second",
			"timeout", c.cfg.DrainTimeout, "running", jobs, "unwritten_outcomes", outcomes)
	} else {
		c.log.Warn(fmt.Sprintf("pgbus: drain timeout reached while waiting for outcomes of finished jobs to be written (the database did not take them); their writes get %s more, then are given up, and those messages run again after their visibility timeout", finalWriteGrace),
			"timeout", c.cfg.DrainTimeout, "unwritten_outcomes", outcomes)
	}
	hardStop()
	last := time.AfterFunc(finalWriteGrace, stopWrites)
	defer last.Stop()
	<-done
}

// every runs fn at each interval until ctx ends, logging failures, and
// at once when told on now (nil: only at the interval).
func (c *Client) every(ctx context.Context, interval time.Duration, fn func(context.Context) error, now <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.try(ctx, fn)
		case <-now:
			c.try(ctx, fn)
		}
	}
}

// try runs fn once, logging its failure.
func (c *Client) try(ctx context.Context, fn func(context.Context) error) {
	// A success says nothing of the database: some tasks (a flush with
	// nothing to write) do not reach it. The reads and writes of the
	// workers tell when it answers again.
	if err := fn(ctx); err != nil && ctx.Err() == nil && !c.quiet(err) {
		c.log.Warn(c.advised("pgbus: background task failed; retrying at the next interval", err), "err", err)
	}
}

func (c *Client) register(ctx context.Context) error {
	c.syncClock(ctx)
	return c.store.RegisterWorker(ctx, c.process())
}

// maxClockSkew is how far this host's clock may be from the database
// server's before the engine warns.
const maxClockSkew = 5 * time.Second

// clockWarnEvery is the least time between two warnings of a skew that
// changed: a clock that keeps jumping is told of once a minute, not at
// every heartbeat.
const clockWarnEvery = time.Minute

// clockWarning is what the log was last told of a skew: whether it was
// warned of (cleared once the clocks are near again), the skew it said,
// and when.
type clockWarning struct {
	sync.Mutex
	warned bool
	skew   time.Duration
	at     time.Time
}

// due tells whether a skew measured at now is to be warned of, and notes
// it as warned if so: the first time it is far, and again when it changed
// by more than maxClockSkew from what was last said, clockWarnEvery after
// that. A skew within maxClockSkew is none, and is forgotten.
func (w *clockWarning) due(skew time.Duration, now time.Time) bool {
	w.Lock()
	defer w.Unlock()
	switch {
	case skew.Abs() <= maxClockSkew:
		w.warned = false
		return false
	case w.warned && ((skew-w.skew).Abs() <= maxClockSkew || now.Sub(w.at) < clockWarnEvery):
		return false
	}
	w.warned, w.skew, w.at = true, skew, now
	return true
}

// syncClock measures how far the database server's clock is from this
// host's, on which deadlines, ages and the minutes of stats are then
// judged (store.Now), and warns when it is far: once, then again when it
// changed by more than maxClockSkew from what it said (at most once per
// clockWarnEvery), until it is near again. Other programs on this host
// may judge times the database wrote on its own clock.
func (c *Client) syncClock(ctx context.Context) {
	skew, err := c.store.SyncClock(ctx)
	if err != nil {
		return // measured again at the next heartbeat
	}
	if c.clockWarn.due(skew, time.Now()) {
		c.log.Warn("pgbus: this host's clock is off from the database server's; pgbus judges deadlines, ages and stats on the server's clock, but fix this host's time synchronization (NTP)",
			"server_ahead_by", skew.String())
	}
}

// process is this process as the registry lists it.
func (c *Client) process() store.WorkerProcess {
	host, _ := os.Hostname()
	names := make([]string, len(c.cfg.Queues))
	total := 0
	for i, q := range c.cfg.Queues {
		names[i] = q.Name
		total += q.Concurrency
	}
	stuck, oldest := c.stuck.oldest(store.MaxStuckListed)
	return store.WorkerProcess{ID: c.id, Hostname: host, PID: os.Getpid(), Queues: names, Concurrency: total,
		HeartbeatInterval: c.cfg.ProcessHeartbeat, Version: buildinfo.Describe(), StuckCount: stuck, StuckHandlers: oldest}
}

// heartbeat marks this process alive, and registers it again when
// retention removed its row (see store.HeartbeatWorker).
func (c *Client) heartbeat(ctx context.Context) error {
	start := time.Now()
	err := c.bounded(ctx, func(ctx context.Context) error {
		return c.store.HeartbeatWorker(ctx, c.process())
	})
	if err != nil {
		return err
	}
	// It always writes: the end of an outage is seen even while every
	// queue is paused and nothing is read.
	c.outage.answered(start)
	_ = c.bounded(ctx, func(ctx context.Context) error { c.syncClock(ctx); return nil })
	// The breakers' lists of users keep this process's while it runs.
	return c.bounded(ctx, func(ctx context.Context) error {
		return c.store.TouchBreakerUsers(ctx, c.breakerUsers)
	})
}

// retention prunes old archives and audit entries when this process wins
// the election.
func (c *Client) retention(ctx context.Context) error {
	// The pass as a whole may take long on a large archive; each of its
	// statements is bounded instead.
	rep, err := c.store.RunRetentionAges(store.WithStatementTimeout(ctx, c.cfg.DatabaseCallTimeout), 1000,
		store.RetentionAges{Audit: c.cfg.AuditRetention, Counters: c.cfg.StatsRetention})
	c.logPruned(rep)
	if rep.AuditKept && !c.auditKept.Swap(true) {
		c.log.Info("pgbus: retention leaves the audit log as it is: this database role may only add to it; entries older than the audit retention stay until a process of a role that may delete them (the schema's owner) runs retention",
			"role", c.store.User(), "older_than", c.cfg.AuditRetention)
	}
	c.logQueuesKept(rep.QueuesKept)
	c.logStepsFailed(ctx, rep.StepsFailed)
	if err != nil && ctx.Err() == nil && unanswered(err) {
		if waited := c.poolWait(ctx, c.cfg.DatabaseCallTimeout, err); waited != nil {
			return waited
		}
		// The statement given up began a timeout ago, its bound.
		c.gaveUp(time.Now().Add(-c.cfg.DatabaseCallTimeout), err)
	}
	return err
}

// flushStats writes the counters. It is not cancelled with ctx: a write
// cancelled after the server committed it would be given back and counted
// twice.
func (c *Client) flushStats(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	deltas := c.stats.take()
	if err := c.store.AddStats(ctx, deltas); err != nil {
		if d, ok := errors.AsType[*store.StatsDeferredError](err); ok {
			// A queue being dropped or made: its counts wait for the next
			// flush, which leaves them out if it was dropped.
			c.stats.giveBack(d.Deferred)
			return nil
		}
		c.stats.giveBack(deltas)
		return err
	}
	return nil
}
