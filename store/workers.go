package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WorkerProcess is one registered worker process.
type WorkerProcess struct {
	ID          string     `json:"id"`
	Hostname    string     `json:"hostname"`
	PID         int        `json:"pid"`
	Queues      []string   `json:"queues"`
	Concurrency int        `json:"concurrency"`
	StartedAt   time.Time  `json:"started_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	StoppedAt   *time.Time `json:"stopped_at,omitempty"`
	// System is "ruby_pgbus" for a process of the Ruby gem pgbus (a row of
	// its table public.pgbus_processes, read only), empty for pgbus's own.
	System string `json:"system,omitempty"`
	// Kind is what a Ruby pgbus process is (worker, supervisor, ...).
	Kind string `json:"kind,omitempty"`
	// Version is the pgbus the process runs ("pgbus v1.4.0 commit ..."),
	// empty for one of an older pgbus or of the Ruby gem.
	Version string `json:"version,omitempty"`
	// HeartbeatAge is how long before the read the last heartbeat was, on
	// the database's clock, which stamps every heartbeat: a reader whose
	// own clock is set apart from the database's would take a running
	// process for a stale one, or a crashed one for running.
	HeartbeatAge time.Duration `json:"-"`
	// SilentAge is how long the process has been silent while the
	// database was up: HeartbeatAge, but counted from the database
	// server's start when the last heartbeat came before it (a process
	// cannot beat while the server is down, and after a restart it needs
	// a moment to beat again); on a standby, HeartbeatAge.
	SilentAge time.Duration `json:"-"`
	// HeartbeatInterval is how often the process said it sends its
	// heartbeat; zero when registering stands for
	// DefaultHeartbeatInterval, and for a Ruby pgbus process it is zero.
	HeartbeatInterval time.Duration `json:"-"`
	// StopError is why the process stopped, when it stopped on an error
	// (StopWorkerOnError), redacted; empty for a clean stop, a running
	// process, one of an older pgbus and one of the Ruby gem.
	StopError string `json:"-"`
	// StuckCount counts the handlers the process gave up on for ignoring
	// their context past their timeout and grace that still run, and
	// StuckHandlers lists the oldest of them, at most MaxStuckListed.
	StuckCount    int            `json:"stuck_count,omitempty"`
	StuckHandlers []StuckHandler `json:"stuck_handlers,omitempty"`
}

// StuckHandler is a handler a worker process gave up on for ignoring its
// context past its timeout and grace, and that still runs: its message
// stays hidden, and its slot of the queue's concurrency taken, until it
// returns.
type StuckHandler struct {
	Queue string `json:"queue"`
	MsgID int64  `json:"msg_id"`
	Kind  string `json:"kind"`
	// GivenUpAt is when the process gave up on it, on its estimate of the
	// database's clock.
	GivenUpAt time.Time `json:"given_up_at"`
}

// MaxStuckListed is how many stuck handlers a worker row lists; its
// count counts them all.
const MaxStuckListed = 20

// StopErrorMax is the most characters of a stop's error a worker row
// keeps.
const StopErrorMax = 2000

// DefaultHeartbeatInterval is the heartbeat interval of a process
// registered without one.
const DefaultHeartbeatInterval = 10 * time.Second

// heartbeatIntervalMS is w's heartbeat interval in milliseconds, as the
// registry keeps it.
func heartbeatIntervalMS(w WorkerProcess) int64 {
	if w.HeartbeatInterval <= 0 {
		return DefaultHeartbeatInterval.Milliseconds()
	}
	return max(w.HeartbeatInterval.Milliseconds(), 1)
}

// heartbeatAgeSQL is the age of a heartbeat at expression at, on the
// database's clock, in nanoseconds as time.Duration counts them.
func heartbeatAgeSQL(at string) string {
	return `(extract(epoch FROM ` + asOfSQL + ` - ` + at + `) * 1000000)::bigint * 1000`
}

// asOfSQL is the time what the server holds is as of: now, but on a
// standby the commit time of the last transaction it replayed, so that
// ages read there are those of its data, not its replay's lag (a worker
// whose heartbeats have yet to arrive is no stale one).
const asOfSQL = `(CASE WHEN pg_catalog.pg_is_in_recovery() THEN coalesce(pg_catalog.pg_last_xact_replay_timestamp(), now()) ELSE now() END)`

// upSinceSQL is since when the database has been up, for SilentAge: the
// server's start (on a standby, whose start says nothing of the primary's,
// -infinity), unless the parameter numbered param holds a time set by
// Store.AssumeUpSince.
func upSinceSQL(param string) string {
	return `coalesce(` + param + `::timestamptz, CASE WHEN pg_catalog.pg_is_in_recovery() THEN '-infinity'::timestamptz ELSE pg_catalog.pg_postmaster_start_time() END)`
}

// silentAgeSQL is SilentAge of a heartbeat at expression at, the time the
// database has been up since in parameter param.
func silentAgeSQL(at, param string) string {
	return heartbeatAgeSQL(`greatest(` + at + `, ` + upSinceSQL(param) + `)`)
}

// AssumeUpSince makes the store count the silence of worker processes
// (WorkerProcess.SilentAge) as if the database had been up since t, not
// since its server started: for tests on a shared server that started
// moments ago, which set heartbeats back in time to stand for a process
// that crashed long ago. The zero time goes back to the server's start.
func (s *Store) AssumeUpSince(t time.Time) {
	if t.IsZero() {
		s.upSince.Store(nil)
		return
	}
	s.upSince.Store(&t)
}

// assumedUpSince is the time AssumeUpSince set, nil for the server's start.
func (s *Store) assumedUpSince() *time.Time { return s.upSince.Load() }

// SystemRubyPgbus marks the processes of the Ruby gem pgbus.
const SystemRubyPgbus = "ruby_pgbus"

// RegisterWorker records a worker process as started.
func (s *Store) RegisterWorker(ctx context.Context, w WorkerProcess) error {
	_, err := s.db.Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, heartbeat_interval_ms, version)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''))
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL, stop_error = NULL, heartbeat_interval_ms = excluded.heartbeat_interval_ms, version = excluded.version,
			stuck_count = 0, stuck_handlers = NULL`,
		w.ID, w.Hostname, w.PID, w.Queues, w.Concurrency, heartbeatIntervalMS(w), w.Version)
	if err != nil {
		return fmt.Errorf("store: register worker %s: %w", w.ID, err)
	}
	return nil
}

// HeartbeatWorker marks a worker process alive now. A process whose row is
// gone (retention prunes the rows of processes unheard of for
// StatsRetention, and a process whose machine was suspended that long was)
// is registered again, from now.
// Its StuckCount and StuckHandlers replace those the row held.
func (s *Store) HeartbeatWorker(ctx context.Context, w WorkerProcess) error {
	stuck, err := stuckJSON(w)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, heartbeat_interval_ms, version, stuck_count, stuck_handlers)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), $8, $9)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), stuck_count = excluded.stuck_count, stuck_handlers = excluded.stuck_handlers`,
		w.ID, w.Hostname, w.PID, w.Queues, w.Concurrency, heartbeatIntervalMS(w), w.Version, w.StuckCount, stuck)
	if err != nil {
		return fmt.Errorf("store: heartbeat of worker %s: %w", w.ID, err)
	}
	return nil
}

// stuckJSON is w's stuck handlers as the registry keeps them: the oldest
// MaxStuckListed, as JSON, or NULL when there are none.
func stuckJSON(w WorkerProcess) ([]byte, error) {
	if len(w.StuckHandlers) == 0 {
		return nil, nil
	}
	listed := w.StuckHandlers[:min(len(w.StuckHandlers), MaxStuckListed)]
	b, err := json.Marshal(listed)
	if err != nil {
		return nil, fmt.Errorf("store: heartbeat of worker %s: encode its stuck handlers: %w", w.ID, err)
	}
	return b, nil
}

// StopWorker marks a worker process as stopped.
func (s *Store) StopWorker(ctx context.Context, id string) error {
	_, err := s.db.Exec(ctx, `UPDATE pgbus.workers SET stopped_at = now(), heartbeat_at = now() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: stop worker %s: %w", id, err)
	}
	return nil
}

// StopWorkerOnError records a worker process as stopped on an error, with
// the error's text, redacted and cut to StopErrorMax characters, for the
// health of every process to read: registered now, if it never was (its
// start was refused).
func (s *Store) StopWorkerOnError(ctx context.Context, w WorkerProcess, why string) error {
	why = s.textFit(ctx).apply(storedText(why, StopErrorMax))
	_, err := s.db.Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, heartbeat_interval_ms, version, stopped_at, stop_error)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), now(), $8)
		ON CONFLICT (id) DO UPDATE SET stopped_at = now(), heartbeat_at = now(), stop_error = excluded.stop_error`,
		w.ID, w.Hostname, w.PID, w.Queues, w.Concurrency, heartbeatIntervalMS(w), w.Version, why)
	if err != nil {
		return fmt.Errorf("store: record worker %s stopped on an error: %w", w.ID, err)
	}
	return nil
}

// MaxListedWorkers is the most processes ListWorkers returns.
const MaxListedWorkers = 1000

// ListWorkers lists worker processes seen within the window: at most
// MaxListedWorkers, those not stopped first, then those stopped on an
// error, then those stopped cleanly, newest first within each: a cut
// leaves out the oldest that stopped cleanly, and a crash loop's many
// refused starts never push a running process out.
// Stopped ones are included so that a crash is visible as a stale
// heartbeat with no stop.
func (s *Store) ListWorkers(ctx context.Context, within time.Duration) ([]WorkerProcess, error) {
	rows, err := s.reads.Query(ctx, `SELECT id, hostname, pid, queues, concurrency, started_at, heartbeat_at, stopped_at, '', '', coalesce(version, ''), `+heartbeatAgeSQL("heartbeat_at")+`,
		       `+silentAgeSQL("heartbeat_at", "$3")+`, heartbeat_interval_ms * 1000000,
		       coalesce(stop_error, ''),
		       CASE WHEN stopped_at IS NULL THEN stuck_count ELSE 0 END,
		       CASE WHEN stopped_at IS NULL THEN stuck_handlers END
		FROM pgbus.workers WHERE heartbeat_at > `+asOfSQL+` - $1 * interval '1 microsecond'
		ORDER BY CASE WHEN stopped_at IS NULL THEN 0 WHEN coalesce(stop_error, '') <> '' THEN 1 ELSE 2 END, started_at DESC LIMIT $2`, within.Microseconds(), MaxListedWorkers, s.assumedUpSince())
	if err != nil {
		return nil, fmt.Errorf("store: list workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WorkerProcess])
	if err != nil {
		return nil, fmt.Errorf("store: list workers: %w", err)
	}
	return out, nil
}

// CountStoppedWorkers counts the processes seen within the window that
// shut down cleanly, for when ListWorkers could not list them all.
func (s *Store) CountStoppedWorkers(ctx context.Context, within time.Duration) (int, error) {
	var n int
	err := s.reads.QueryRow(ctx, `SELECT count(*) FROM pgbus.workers
		WHERE heartbeat_at > `+asOfSQL+` - $1 * interval '1 microsecond' AND stopped_at IS NOT NULL`, within.Microseconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count stopped workers: %w", err)
	}
	return n, nil
}

// PruneWorkers deletes worker rows whose last heartbeat is older than age.
func (s *Store) PruneWorkers(ctx context.Context, age time.Duration) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM pgbus.workers WHERE heartbeat_at < now() - $1 * interval '1 microsecond'`, age.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("store: prune workers: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ForgetWorkersOf deletes the registry rows of the worker processes whose
// queues are all among queues, stopped or not, and returns how many it
// deleted: for a benchmark that dropped the queues it made and ran its own
// workers on, whose rows would otherwise be listed for StatsRetention. A
// process that also worked another queue keeps its row.
func (s *Store) ForgetWorkersOf(ctx context.Context, queues []string) (int64, error) {
	if len(queues) == 0 {
		return 0, nil
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM pgbus.workers WHERE cardinality(queues) > 0 AND queues <@ $1::text[]`, queues)
	if err != nil {
		return 0, fmt.Errorf("store: forget the workers of queues %q: %w", queues, err)
	}
	return tag.RowsAffected(), nil
}

// ListRubyProcesses lists the processes of the Ruby gem pgbus that beat
// within the window, from its table public.pgbus_processes, which it only
// reads: none where that table does not exist or the role may not read it.
// Their queues are the metadata's queues as PGMQ names them (pgbus_<name>),
// their concurrency its threads; its times are read as rubyTime reads
// them. They never have a stop time: the gem deletes a stopped process's
// row.
func (s *Store) ListRubyProcesses(ctx context.Context, within time.Duration) ([]WorkerProcess, error) {
	var readable bool
	err := s.reads.QueryRow(ctx, `
		SELECT coalesce(has_table_privilege(c.oid, 'SELECT') AND has_schema_privilege(c.relnamespace, 'USAGE'), false)
		FROM (SELECT 1) one
		LEFT JOIN pg_catalog.pg_class c ON c.relname = 'pgbus_processes' AND c.relkind IN ('r', 'p', 'v')
		     AND c.relnamespace = 'public'::regnamespace`).Scan(&readable)
	if err != nil {
		return nil, fmt.Errorf("store: look for Ruby pgbus's processes: %w", err)
	}
	if !readable {
		return nil, nil
	}
	rows, err := s.reads.Query(ctx, `
		SELECT 'ruby:' || p.id::text, coalesce(p.hostname, ''), coalesce(p.pid, 0),
		       coalesce(ARRAY(SELECT CASE WHEN q LIKE 'pgbus\_%' THEN q ELSE 'pgbus_' || q END
		                      FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(p.metadata->'queues') = 'array' THEN p.metadata->'queues' ELSE '[]' END) q),
		                '{}'),
		       CASE WHEN jsonb_typeof(p.metadata->'threads') = 'number' THEN (p.metadata->>'threads')::numeric::int ELSE 0 END,
		       `+rubyTime("p.created_at")+`, `+rubyBeat+`,
		       NULL::timestamptz, $2::text, coalesce(p.kind, ''), '',
		       `+heartbeatAgeSQL(rubyBeat)+`, `+silentAgeSQL(rubyBeat, "$3")+`, 0::bigint, '', 0, NULL::jsonb
		FROM public.pgbus_processes p
		WHERE `+rubyBeat+` > `+asOfSQL+` - $1 * interval '1 microsecond'
		ORDER BY p.created_at DESC LIMIT 1000`, within.Microseconds(), SystemRubyPgbus, s.assumedUpSince())
	if err != nil {
		return nil, fmt.Errorf("store: list Ruby pgbus's processes: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WorkerProcess])
	if err != nil {
		return nil, fmt.Errorf("store: list Ruby pgbus's processes: %w", err)
	}
	return out, nil
}

// rubyTime is column col of public.pgbus_processes as a timestamptz.
// Rails writes its times in UTC into columns without a zone, which only
// AT TIME ZONE 'UTC' reads as the instants they are; a table made with
// timestamptz columns holds instants already, which AT TIME ZONE 'UTC'
// would turn into UTC wall times, read back in the session's time zone.
// The column's type picks the branch, whatever the session's TimeZone.
func rubyTime(col string) string {
	return `(CASE WHEN pg_catalog.pg_typeof(` + col + `) = 'timestamp with time zone'::regtype THEN ` + col + `::timestamptz
		ELSE ` + col + ` AT TIME ZONE 'UTC' END)`
}

// rubyBeat is when a Ruby pgbus process last beat: its last heartbeat, or
// its row's last update where it has none.
var rubyBeat = `coalesce(` + rubyTime("p.last_heartbeat_at") + `, ` + rubyTime("p.updated_at") + `)`

// Replica is what a server says of its replication: whether it is a
// standby (a read replica), and then how far its data is behind.
type Replica struct {
	Standby bool
	// ReplayedAt is the commit time, on the primary, of the last
	// transaction it replayed: what it shows is as of then. Zero when it
	// replayed none since it started.
	ReplayedAt time.Time
	// Behind is how long ago that commit was while it has received WAL it
	// has yet to replay; 0 when it replayed all it received (a primary
	// with nothing to commit leaves a standby's last commit old, and it
	// no later for that).
	Behind time.Duration
}

// ReplicaState says whether the server is a standby, and how far behind.
func (s *Store) ReplicaState(ctx context.Context) (Replica, error) {
	var r Replica
	var at *time.Time
	var behindUS int64
	err := s.reads.QueryRow(ctx, `
		SELECT pg_catalog.pg_is_in_recovery(), pg_catalog.pg_last_xact_replay_timestamp(),
		       CASE WHEN pg_catalog.pg_is_in_recovery()
		             AND pg_catalog.pg_last_wal_receive_lsn() IS DISTINCT FROM pg_catalog.pg_last_wal_replay_lsn()
		            THEN coalesce((extract(epoch FROM now() - pg_catalog.pg_last_xact_replay_timestamp()) * 1000000)::bigint, 0)
		            ELSE 0 END`).Scan(&r.Standby, &at, &behindUS)
	if err != nil {
		return r, fmt.Errorf("store: read the server's replication state: %w", err)
	}
	if at != nil && r.Standby {
		r.ReplayedAt = at.UTC()
	}
	r.Behind = max(time.Duration(behindUS)*time.Microsecond, 0)
	return r, nil
}
