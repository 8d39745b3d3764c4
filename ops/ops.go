// Package ops is pgbus's operations layer: every operation a person or an
// agent can ask for (dead-letter summary, list, show, retry, discard and
// purge, and the discarded messages listed and restored; queue stats, live
// messages, pause, resume, run now, create, drop and purge; send; health,
// the overview of the dashboard and the probes, throughput, workers,
// circuit breakers listed, reset and opened by hand; the audit log), each
// taking one typed request and returning one typed result.
//
// Front ends (the CLI, the MCP tools and resources, an HTTP dashboard) parse
// their input into a request, call one operation and render its result in
// their own words. What an operation means is decided here, once: its
// validation, defaults, per-item outcomes, audit entry and what is shown of
// a message (payload gates, truncation, redaction). Next steps are returned
// as structured hints (Hint) that each front end names in its own
// vocabulary; no text here names a CLI command or an MCP tool. Struct tags
// are the exception: their jsonschema descriptions are the MCP tools'
// contract, read by agents, and name the tools to call.
//
// The package holds no SQL: it calls package engine and package store.
package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// Errors wrapped by every error of an operation that the caller can act on.
// They are the store's kinds, so errors.Is works across layers.
var (
	// ErrInvalid: the request was rejected before anything was written.
	ErrInvalid = store.ErrInvalid
	// ErrNotFound: a queue, message or breaker does not exist.
	ErrNotFound = store.ErrNotFound
	// ErrReadOnly: a write operation on a Service opened read-only.
	ErrReadOnly = errors.New("read-only")
	// ErrUnavailable: the database did not answer (down, restarting, the
	// network to it cut) or took no connections now; the same call may
	// succeed once it is back. It is store.ErrUnavailable, which the
	// engine's and the store's errors wrap alike.
	ErrUnavailable = store.ErrUnavailable
)

// Options configure a Service.
type Options struct {
	// AllowPayloads is the server-side payload gate: message payloads are
	// shown only when it is set and the request asks for them.
	AllowPayloads bool
	// SafeFields are payload fields (keys joined by dots: tenant,
	// file.type) whose values are shown even when payloads are not:
	// DLQShow lists them and DLQSummary breaks groups down by one.
	// Their values are redacted like any text, and hidden whole when a
	// key is named like a secret.
	SafeFields []string
	// ReadOnly refuses every write operation with ErrReadOnly.
	ReadOnly bool
	// Bounds limit what a view of a message carries. Zero: DefaultBounds;
	// a field left zero takes its default (see Bounds).
	Bounds Bounds
	// StaleAfter is how old a worker's heartbeat may be before the worker
	// counts as stale (crashed or hung). Default 30s: three missed beats.
	// A process that beats less often than a third of it
	// (engine.Config.ProcessHeartbeat) counts as stale after three of its
	// own intervals. At least 1ms.
	StaleAfter time.Duration
	// StallAfter is how long the oldest ready message may wait, with nothing
	// settled meanwhile, before a queue counts as stalled. Default 5m; at
	// least 1ms.
	StallAfter time.Duration
	// OldTransactionAfter is how long a transaction may stay open before
	// health notes it (old_transaction): while one lasts, vacuum leaves
	// the dead rows of the queue tables, and reads slow down as they
	// grow. After an hour it makes the verdict DEGRADED. Default 10m; at
	// least 1ms.
	OldTransactionAfter time.Duration
	// DatabaseCallTimeout bounds the database work of each call, as
	// engine.Config.DatabaseCallTimeout bounds the workers': a connection
	// that stops answering without being closed (a failover behind a
	// proxy or load balancer, a frozen server, a network path that drops
	// everything) would otherwise hold a call, and whoever waits on it,
	// for as long as TCP keeps the connection, hours. A read gives up once
	// the bound passes; a write, which may move many messages in batches
	// on a healthy database, once one of its statements goes unanswered
	// that long, what it wrote before staying written. A call given up
	// fails as ErrUnavailable, saying so, and drops the store's
	// connections, which froze with its own, once per freeze
	// (store.Store.DropFrozenConnections): the next call connects afresh.
	// Default engine.DefaultDatabaseCallTimeout (30s); at least
	// engine.MinDatabaseCallTimeout.
	DatabaseCallTimeout time.Duration
	// ReadLockWait bounds how long a read (a view, a list, a summary,
	// stats, health, a dry run) waits for a lock another session holds on
	// a table it reads (a LOCK TABLE, a VACUUM FULL, an ALTER TABLE, a
	// long CREATE INDEX behind which such a lock waits): the read then
	// fails as ErrUnavailable naming the table, the session that holds
	// it and what to do, rather than holding its caller and a connection
	// of the pool, which the workers share, for the whole
	// DatabaseCallTimeout. Writes wait for locks as long as their bound
	// lets them. Default DefaultReadLockWait; at least 1ms; negative, or
	// not shorter than DatabaseCallTimeout, leaves reads to their call
	// bound alone.
	ReadLockWait time.Duration
	// Now is the clock; default the database server's (store.Store.Now,
	// measured again at a call when it was last over a minute ago), on
	// which the times the database wrote are compared. Tests pin it.
	Now func() time.Time
	// Logger receives warnings (an audit entry that could not be
	// written yet). Default: none.
	Logger *slog.Logger
	// Unrecorded receives each audit entry that could not be recorded
	// (the database did not take it before Close gave up, or more were
	// held than a service holds) as one JSON line, so that the log of
	// whoever ran the operation keeps it: a command passes its stderr.
	// Default: Logger, at level ERROR.
	Unrecorded io.Writer
	// Observers watch what the service sends (engine.SendObserver) and
	// retries out of DLQs (RetryObserver), for traces. One that panics is
	// logged to Logger and the operation goes on without it. Default: none.
	Observers []engine.Observer
	// Handlers are the handlers the front end knows queues to be run with,
	// by queue name: a handler type (the demo's queues run with "demo"),
	// or HandlerConfigured when the configuration gives the queue its
	// handler. A next step that starts a worker for a queue names it, so
	// that the step runs as given; for a queue not here it says that a
	// handler must be chosen (WorkNeedsHandler). Default: nil, for a Go
	// program that runs its own workers with handlers of its code: only
	// it can start them, so no next step starts a worker (OpWork); the
	// reasons and notes still say which queues no worker serves.
	Handlers map[string]string
	// Gate, when set, holds every call while the process readies its
	// database (see Gate): one that started while the database did not
	// answer. Default: none, calls go through.
	Gate *Gate
	// ViewBytes bounds the payload bytes that views (DLQShow, and
	// QueueMessages with payloads) work on at once, across concurrent
	// calls: redacting and previewing a payload takes memory several
	// times its size. A call waits for its share, on its own context,
	// while others hold the rest; a payload larger than the bound takes
	// all of it. Default DefaultViewBytes.
	ViewBytes int64
	// OwnWorkers, when set, is the state of the workers the process runs
	// beside this service: once they stopped on an error
	// (Service.WorkersStopped, through any service given the same one),
	// the health verdict is STALLED with the reason workers_stopped.
	// Default: a state of this service's own.
	OwnWorkers *OwnWorkers
}

// minOptionDuration is the shortest Options.StaleAfter, StallAfter,
// OldTransactionAfter and ReadLockWait New takes: a Duration is
// nanoseconds, so that a bare number meant as seconds or minutes
// (StaleAfter: 30) is far below it.
const minOptionDuration = time.Millisecond

// checkDurations refuses a duration shorter than minOptionDuration, which
// would count every worker stale (StaleAfter), every queue with a ready
// message stalled (StallAfter), every transaction old
// (OldTransactionAfter) or fail every read that meets a lock at once
// (ReadLockWait); and a negative one where none has a meaning (all but
// ReadLockWait's), which the default took the place of without a word.
func (o Options) checkDurations() error {
	for _, d := range []struct {
		field    string
		value    time.Duration
		negative bool   // a negative value has a meaning
		give     string // a time.Duration and the bare number it is not
		why      string // what a shorter one does
	}{
		{"StaleAfter", o.StaleAfter, false, "30 * time.Second (a bare 30 is 30ns)", "which would count every worker stale"},
		{"StallAfter", o.StallAfter, false, "5 * time.Minute (a bare 300 is 300ns)", "which would count every queue with a ready message stalled"},
		{"OldTransactionAfter", o.OldTransactionAfter, false, "10 * time.Minute (a bare 600 is 600ns)", "which would count every transaction old"},
		{"ReadLockWait", o.ReadLockWait, true, "3 * time.Second (a bare 3 is 3ns)", "which would fail every read that meets a lock at once"},
	} {
		if d.value < 0 && !d.negative {
			return invalidf("Options.%s %s is negative: give a positive time.Duration such as %s, or leave it zero for the default", d.field, d.value, d.give)
		}
		if d.value > 0 && d.value < minOptionDuration {
			return invalidf("Options.%s %s is shorter than %s, %s: give a time.Duration such as %s, or leave it zero for the default",
				d.field, d.value, minOptionDuration, d.why, d.give)
		}
	}
	return nil
}

// DefaultReadLockWait is the default Options.ReadLockWait: a lock held
// for a moment (a worker's batch, an index built on an empty table) does
// not fail a read, and one held longer is told of while a person or agent
// still waits for the answer.
const DefaultReadLockWait = 3 * time.Second

// HandlerConfigured, in Options.Handlers, is a queue whose handler the
// configuration gives: a worker given the configuration runs it with no
// handler named.
const HandlerConfigured = "configured"

// Service runs operations on one pgbus database. It is safe for concurrent
// use; the caller named in each call's context (WithCaller, WithClient) is
// recorded in the audit log.
type Service struct {
	store  *store.Store
	sender *engine.Client
	opts   Options
	// dbClock is set when the clock is the database server's, measured
	// again by enter when it was last over clockSyncEvery ago.
	dbClock bool
	// audit holds the audit entries the database could not take yet.
	audit auditHold
	// retryTrace is the RetryObservers' hook; nil without one.
	retryTrace func(context.Context, string, int64, store.TraceContext) (store.TraceContext, func(string, int64, error))

	// schema is the schema version health last read, at schemaAt (see
	// recordedSchema); schemaMu guards both.
	schemaMu sync.Mutex
	schema   store.MigrationStatus
	schemaAt time.Time

	// views bounds the payload bytes views work on at once.
	views *viewGate
}

// New returns a Service over a store whose schema is migrated (or checked).
// It reads nothing: on a database whose schema is missing or older than
// this pgbus, an operation that fails on what is missing answers an *Error
// naming both versions, with a hint to OpMigrate (Store.Migrate). A nil
// store, or one without a pool (store.New(nil)), is refused with
// ErrInvalid; one over a pool that has not connected yet is taken.
func New(st *store.Store, opts Options) (*Service, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: ops.New needs a store: open one with store.Open", ErrInvalid)
	}
	if st.Pool() == nil {
		return nil, fmt.Errorf("%w: ops.New needs a store with a pool, and this one was made by store.New with a nil pool (or is a zero store.Store): open one with store.Open, or pass store.New the pool pgxpool.NewWithConfig returned", ErrInvalid)
	}
	opts.SafeFields = slices.Clone(opts.SafeFields)
	for i, f := range opts.SafeFields {
		opts.SafeFields[i] = strings.TrimSpace(f)
	}
	if err := CheckSafeFields(opts.SafeFields); err != nil {
		return nil, err
	}
	opts.SafeFields = slices.Compact(slices.Sorted(slices.Values(opts.SafeFields)))
	var err error
	if opts.Bounds, err = opts.Bounds.withDefaults(); err != nil {
		return nil, err
	}
	if err := opts.checkDurations(); err != nil {
		return nil, err
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = 30 * time.Second
	}
	if opts.OwnWorkers == nil {
		opts.OwnWorkers = &OwnWorkers{}
	}
	if opts.OldTransactionAfter == 0 {
		opts.OldTransactionAfter = 10 * time.Minute
	}
	if opts.StallAfter == 0 {
		opts.StallAfter = 5 * time.Minute
	}
	dbClock := opts.Now == nil
	if dbClock {
		opts.Now = st.Now
	}
	if opts.DatabaseCallTimeout == 0 {
		opts.DatabaseCallTimeout = engine.DefaultDatabaseCallTimeout
	}
	if opts.DatabaseCallTimeout < engine.MinDatabaseCallTimeout {
		return nil, invalidf("Options.DatabaseCallTimeout %s is shorter than %s, which a busy but healthy database may take: give for example 30 * time.Second, or leave it zero for the default %s",
			opts.DatabaseCallTimeout, engine.MinDatabaseCallTimeout, engine.DefaultDatabaseCallTimeout)
	}
	if opts.ReadLockWait == 0 {
		opts.ReadLockWait = DefaultReadLockWait
	}
	switch {
	case opts.ViewBytes < 0:
		return nil, invalidf("Options.ViewBytes is %d; give the most payload bytes views may work on at once, or 0 for the default (%d)", opts.ViewBytes, DefaultViewBytes)
	case opts.ViewBytes == 0:
		opts.ViewBytes = DefaultViewBytes
	}
	opts.Observers = slices.Clone(opts.Observers)
	sender, err := engine.NewClient(st, engine.Config{RetentionInterval: -1, Observers: opts.Observers, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("ops: make sender: %w", err)
	}
	return &Service{store: st, sender: sender, opts: opts, retryTrace: retryTrace(opts.Observers, opts.Logger), dbClock: dbClock,
		views: newViewGate(opts.ViewBytes)}, nil
}

// AllowsPayloads reports whether the service may show payloads at all. A
// nil Service shows none: a front end that asks it before it checks the
// Service must not be told payloads are allowed.
func (s *Service) AllowsPayloads() bool { return s != nil && s.opts.AllowPayloads }

// ReadOnly reports whether write operations are refused. A nil Service,
// or one ops.New did not make, is read-only: it refuses every call, and a
// front end that asks it which actions to offer must offer none.
func (s *Service) ReadOnly() bool { return s == nil || s.store == nil || s.opts.ReadOnly }

// PoolSize is how many connections the service's database pool opens at
// most, which its calls share: a front end that runs calls for many
// clients bounds them by it.
func (s *Service) PoolSize() int {
	if s == nil || s.store == nil {
		return 0
	}
	return s.store.PoolSize()
}

// Transports a call reaches pgbus through, as the audit log records them.
const (
	// TransportCLI is the command line, in the process that runs it.
	TransportCLI = "cli"
	// TransportStdio is MCP over a child process's stdin and stdout.
	TransportStdio = "stdio"
	// TransportSSE is MCP over the legacy HTTP+SSE transport.
	TransportSSE = "sse"
	// TransportHTTP is MCP over Streamable HTTP.
	TransportHTTP = "http"
)

// Caller is who made the calls of a context, as the audit log records it.
// Client is what the caller says it is; Transport and Principal are what
// pgbus saw, so a client naming itself "cli" over MCP is told apart from
// the command line.
type Caller struct {
	// Client is "cli", "dashboard", or "mcp:" and the name/version the MCP
	// client declared on initialize (a claim nobody checked); a Go
	// program names itself (WithClient). The calls of a context that
	// names none are recorded as made by "unknown".
	Client string
	// Transport is how the calls came in: TransportCLI, TransportStdio,
	// TransportSSE or TransportHTTP; "" when the front end did not say.
	Transport string
	// Principal is who authenticated, when someone did: over HTTP with the
	// bearer token, "token sha256:" and the first 8 hex digits of the
	// token's SHA-256; "" otherwise.
	Principal string
}

type callerKey struct{}

// WithCaller names the caller of the calls made with ctx, for the audit log.
// A nil ctx is taken for context.Background(): naming a caller cannot
// return an error, and a panic here would take the front end down.
func WithCaller(ctx context.Context, c Caller) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, callerKey{}, c)
}

// who names the caller as a record of who did something shows it: the
// client, and who authenticated when someone did.
func (c Caller) who() string {
	if c.Principal == "" {
		return c.Client
	}
	return clipBytes(c.Client+" ("+c.Principal+")", store.MaxAuditName)
}

// CallerFrom returns the caller WithCaller named; its Client is "unknown"
// when none was named, as it is for a nil ctx.
func CallerFrom(ctx context.Context) Caller {
	var c Caller
	if ctx != nil {
		c, _ = ctx.Value(callerKey{}).(Caller)
	}
	if c.Client == "" {
		c.Client = "unknown"
	}
	return c
}

// WithClient names the client of the calls made with ctx, keeping the
// transport and principal already named: the transport knows those, the
// MCP layer above it the client. A client names itself, so text PostgreSQL
// cannot store (bytes that are not UTF-8, NUL characters) is replaced by
// U+FFFD, and a name longer than the audit log keeps
// (store.MaxAuditName bytes) is cut, rather than failing the call or
// losing its audit entry. A nil ctx is taken for context.Background(), as
// WithCaller takes it.
func WithClient(ctx context.Context, client string) context.Context {
	var c Caller
	if ctx != nil {
		c, _ = ctx.Value(callerKey{}).(Caller)
	}
	c.Client = clipBytes(storableText(client), store.MaxAuditName)
	return WithCaller(ctx, c)
}

// clipBytes cuts s to at most n bytes, at the start of a character.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ClientFrom returns the client WithClient named, or "unknown".
func ClientFrom(ctx context.Context) string { return CallerFrom(ctx).Client }

func (s *Service) now() time.Time { return s.opts.Now().Truncate(time.Microsecond) }

// Now returns the time on the service's clock (Options.Now): by default
// the database server's, as last measured, on which front ends count the
// ages of what the database wrote (dead since, last heartbeat).
func (s *Service) Now() time.Time { return s.now() }

// checkWrite refuses a write on a read-only service.
func (s *Service) checkWrite(op string) error {
	return s.checkWriteIn(context.Background(), op)
}

// checkWriteIn is checkWrite of a call made with ctx: a preview
// (withPreview), a dry run that only reads, passes on a read-only service.
func (s *Service) checkWriteIn(ctx context.Context, op string) error {
	if previewing(ctx) {
		return nil
	}
	if s.opts.ReadOnly {
		return &Error{Msg: fmt.Sprintf("%s is a write operation and this server is read-only", op), Err: ErrReadOnly}
	}
	return nil
}
