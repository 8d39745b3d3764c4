package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Circuit breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerConfig names a circuit breaker and sets when it opens.
type BreakerConfig struct {
	Name string
	// FailureThreshold consecutive failures open the breaker.
	FailureThreshold int
	// CoolOff is how long it stays open the first time; each failed probe
	// doubles it, up to MaxCoolOff.
	CoolOff    time.Duration
	MaxCoolOff time.Duration
}

// MaxBreakerName is the longest name a circuit breaker may have, in bytes.
const MaxBreakerName = 200

// Validate checks a breaker's configuration.
func (c BreakerConfig) Validate() error {
	switch {
	case c.Name == "" || len(c.Name) > MaxBreakerName:
		return invalidf("circuit breaker name must be 1 to %d characters", MaxBreakerName)
	case c.FailureThreshold < 1 || c.FailureThreshold > 10000:
		return invalidf("circuit breaker %q: failure threshold %d is out of range 1..10000", c.Name, c.FailureThreshold)
	case c.CoolOff < 10*time.Millisecond || c.CoolOff > 24*time.Hour:
		return invalidf("circuit breaker %q: cool-off %s is out of range 10ms..24h", c.Name, c.CoolOff)
	case c.MaxCoolOff < c.CoolOff || c.MaxCoolOff > 7*24*time.Hour:
		return invalidf("circuit breaker %q: max cool-off %s must be at least the cool-off (%s) and at most 168h", c.Name, c.MaxCoolOff, c.CoolOff)
	}
	return nil
}

// BreakerState is a circuit breaker as stored.
type BreakerState struct {
	Name                  string     `json:"name"`
	State                 string     `json:"state"`
	ConsecutiveFailures   int        `json:"consecutive_failures"`
	FailureThreshold      int        `json:"failure_threshold"`
	CoolOffSeconds        float64    `json:"cool_off_seconds"`
	CurrentCoolOffSeconds float64    `json:"current_cool_off_seconds"`
	MaxCoolOffSeconds     float64    `json:"max_cool_off_seconds"`
	OpenedAt              *time.Time `json:"opened_at,omitempty"`
	OpenUntil             *time.Time `json:"open_until,omitempty"`
	LastError             string     `json:"last_error,omitempty"`
	UpdatedAt             time.Time  `json:"updated_at"`
	// LastSuccessAt is kept to within a second; LastFailureAt exactly.
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	LastFailureAt *time.Time `json:"last_failure_at,omitempty"`
	// OpenedBy and OpenReason say who opened the breaker by hand and why,
	// while that open period lasts; both are "" otherwise.
	OpenedBy   string `json:"opened_by,omitempty"`
	OpenReason string `json:"open_reason,omitempty"`
	// LastErrorClass is the error class of the last failure (http.429,
	// say), and LastRetryAfterMs the wait its Retry-After asked for, in
	// milliseconds; "" and 0 when it gave none, or an older pgbus
	// recorded it.
	LastErrorClass   string        `json:"last_error_class,omitempty"`
	LastRetryAfterMs int64         `json:"last_retry_after_ms,omitempty"`
	Users            []BreakerUser `json:"users"`
}

// FailedCall is a failed call a breaker counts: its message, its error
// class and the wait the downstream asked for (a Retry-After), zero when
// none.
type FailedCall struct {
	Error      string
	Class      string
	RetryAfter time.Duration
}

// BreakerUser is a queue and kind whose handler uses a breaker. Kind ""
// is the queue's default handler: every kind without one of its own.
type BreakerUser struct {
	Queue string `json:"queue"`
	Kind  string `json:"kind"`
	// SeenAt is when a running worker process last said it uses the
	// breaker here: at its start, then within every BreakerUsersRefresh.
	SeenAt time.Time `json:"seen_at"`
}

// EnsureBreaker creates a breaker or updates its configuration, keeping its
// state. A closed breaker takes the new cool-off for its next opening. An
// open or half-open one keeps the end of the opening in progress, and its
// next opening is the new cool-off doubled as often as the old one was
// (its current cool-off scaled by new over old, within the new bounds):
// the failed probes so far still count, but an opening is never cut short
// by a configuration change, since the downstream it protects failed at
// its start. The update reads the row as locked, so processes that ensure
// the same configuration at once leave the same values.
func (s *Store) EnsureBreaker(ctx context.Context, c BreakerConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO pgbus.circuit_breakers AS b (name, failure_threshold, cool_off_ms, max_cool_off_ms, current_cool_off_ms)
		VALUES ($1, $2, $3, $4, $3)
		ON CONFLICT (name) DO UPDATE SET failure_threshold = excluded.failure_threshold,
			cool_off_ms = excluded.cool_off_ms, max_cool_off_ms = excluded.max_cool_off_ms,
			current_cool_off_ms = CASE WHEN b.state = 'closed' THEN excluded.cool_off_ms
				ELSE least(greatest(b.current_cool_off_ms * excluded.cool_off_ms / b.cool_off_ms, excluded.cool_off_ms), excluded.max_cool_off_ms) END`,
		c.Name, c.FailureThreshold, c.CoolOff.Milliseconds(), c.MaxCoolOff.Milliseconds())
	if err != nil {
		return fmt.Errorf("store: set up circuit breaker %q: %w", c.Name, err)
	}
	return nil
}

// BreakerVerdict is what a breaker says to one call.
type BreakerVerdict struct {
	// Allowed: the call may go ahead; Probe: it is the one trial call of a
	// half-open breaker.
	Allowed bool
	Probe   bool
	// RetryIn is how long to wait before trying again when not allowed,
	// by the database's clock: a worker's own clock, minutes off, would
	// wait minutes too long or not at all.
	RetryIn time.Duration
	// ProbeUntil is when the probe is taken for lost: for a probe, its
	// own, which also names it to ReleaseBreakerProbe; for a call told to
	// wait on a half-open breaker, the running probe's, which a snooze of
	// the call names (SnoozeItem.Probe).
	ProbeUntil time.Time
	// HeldFrom is, for a probe, the end of the open period it follows:
	// the jobs held until then wait from then on, visible to any read,
	// and the end of the probe moves those still unread with the others
	// (WakeProbeHolds).
	HeldFrom time.Time
}

// AcquireBreaker asks an existing breaker whether a call may go ahead. In
// one statement it lets exactly one caller through as the probe once the
// cool-off has passed (or a probe was lost: probeTimeout after it started).
// A call that meets the probe running waits until the probe is taken for
// lost, not less: the process that ran the probe moves the jobs held
// meanwhile as soon as the probe ends (WakeProbeHolds), and a shorter wait
// had every held job read and snoozed again, once a second each, for the
// whole probe.
func (s *Store) AcquireBreaker(ctx context.Context, name string, probeTimeout time.Duration) (BreakerVerdict, error) {
	var verdict string
	var until *time.Time
	var waitMS int64
	var probing *time.Time  // the running probe's probe_until, for a wait on it
	var heldFrom *time.Time // a probe's open period's end (the claim leaves open_until)
	err := s.db.QueryRow(ctx, `
		WITH claim AS (
			UPDATE pgbus.circuit_breakers SET state = 'half_open', probe_until = now() + $2 * interval '1 millisecond', updated_at = now(),
				opened_by = NULL, open_reason = NULL, opened_by_hand_until = NULL
			WHERE name = $1 AND ((state = 'open' AND open_until <= now()) OR (state = 'half_open' AND probe_until <= now()))
			RETURNING 'probe'::text AS verdict, probe_until AS until, NULL::timestamptz AS probing, open_until AS held_from
		)
		, verdict AS (
			SELECT verdict, until, probing, held_from FROM claim
			UNION ALL
			SELECT CASE state WHEN 'closed' THEN 'allow' ELSE 'wait' END,
			       greatest(CASE state WHEN 'open' THEN open_until ELSE probe_until END, now() + interval '50 milliseconds'),
			       CASE state WHEN 'half_open' THEN probe_until END, NULL
			FROM pgbus.circuit_breakers WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM claim)
		)
		SELECT verdict, until, coalesce(ceil(extract(epoch FROM until - now()) * 1000), 0)::bigint, probing, held_from FROM verdict`,
		name, probeTimeout.Milliseconds()).Scan(&verdict, &until, &waitMS, &probing, &heldFrom)
	if err == pgx.ErrNoRows {
		return BreakerVerdict{}, notFoundf("circuit breaker %q does not exist", name)
	}
	if err != nil {
		return BreakerVerdict{}, fmt.Errorf("store: ask circuit breaker %q: %w", name, err)
	}
	v := BreakerVerdict{Allowed: verdict != "wait", Probe: verdict == "probe"}
	switch {
	case until == nil:
	case !v.Allowed:
		v.RetryIn = time.Duration(max(waitMS, 0)) * time.Millisecond
		if probing != nil {
			v.ProbeUntil = *probing
		}
	case v.Probe:
		v.ProbeUntil = *until
		if heldFrom != nil {
			v.HeldFrom = *heldFrom
		}
	}
	return v, nil
}

// ReleaseBreakerProbe gives back a probe whose call said nothing of the
// downstream (its input was bad, it was discarded, snoozed or cut off by a
// stop): the breaker is open again with its cool-off over, so that the
// next call probes at once instead of waiting for the probe to be taken for
// lost. probeUntil is the probe's BreakerVerdict.ProbeUntil: a probe taken
// for lost, whose breaker has moved on (a later probe, a success, a
// failure), releases nothing. It returns the change, none when nothing was
// released.
func (s *Store) ReleaseBreakerProbe(ctx context.Context, name string, probeUntil time.Time) (BreakerChange, error) {
	var c BreakerChange
	err := s.db.QueryRow(ctx, `
		UPDATE pgbus.circuit_breakers SET state = 'open', open_until = now(), probe_until = NULL, updated_at = now()
		WHERE name = $1 AND state = 'half_open' AND probe_until = $2
		RETURNING 'half_open', state`, name, probeUntil).Scan(&c.From, &c.To)
	if err == pgx.ErrNoRows {
		return BreakerChange{}, nil
	}
	if err != nil {
		return BreakerChange{}, fmt.Errorf("store: release the probe of circuit breaker %q: %w", name, err)
	}
	return c, nil
}

// successCloses is true of a breaker that a success closes: a half-open
// one (its probe succeeded) or a closed one with failures counted. SET
// expressions all read the row as it was, so each may test it.
const successCloses = `(state = 'half_open' OR (state = 'closed' AND consecutive_failures <> 0))`

// BreakerSuccess records a successful call: it closes a half-open breaker
// (its probe succeeded) and clears a closed one's failure count. An open
// breaker stays open: a call let through before it opened says nothing of
// the downstream now. last_success_at is moved at most once a second, so a
// closed breaker with no failures is written at most that often.
func (s *Store) BreakerSuccess(ctx context.Context, name string) error {
	_, err := s.BreakerSucceeded(ctx, name)
	return err
}

// BreakerChange is a breaker's state before and after one call was
// recorded on it; both are "" when the record changed nothing.
type BreakerChange struct {
	From, To string
	// Failures counts the consecutive failures, and OpenUntil is when an
	// open breaker lets a probe through; both only after a failure.
	Failures  int
	OpenUntil time.Time
	// ProbeIn is how long after the change a probe is let through, on the
	// database server's clock, which wrote OpenUntil: this process's
	// estimate of that clock is off by the time the estimate took.
	ProbeIn time.Duration
}

// Opened reports whether a failure opened the breaker: a closed one's
// threshold was reached, or a half-open one's probe failed.
func (c BreakerChange) Opened() bool { return c.From != BreakerOpen && c.To == BreakerOpen }

// Changed reports whether the breaker moved to another state.
func (c BreakerChange) Changed() bool { return c.From != c.To }

// BreakerSucceeded is BreakerSuccess, also saying how the state changed:
// from half_open to closed when a probe succeeded. The state before is
// read without a lock, so a change that races with another one may be
// reported as none; the breaker itself is updated exactly as
// BreakerSuccess says.
func (s *Store) BreakerSucceeded(ctx context.Context, name string) (BreakerChange, error) {
	var c BreakerChange
	err := s.db.QueryRow(ctx, `
		WITH prev AS (SELECT state AS was FROM pgbus.circuit_breakers WHERE name = $1)
		UPDATE pgbus.circuit_breakers SET last_success_at = now(),
			state = CASE WHEN `+successCloses+` THEN 'closed' ELSE state END,
			consecutive_failures = CASE WHEN `+successCloses+` THEN 0 ELSE consecutive_failures END,
			current_cool_off_ms = CASE WHEN `+successCloses+` THEN cool_off_ms ELSE current_cool_off_ms END,
			opened_at = CASE WHEN `+successCloses+` THEN NULL ELSE opened_at END,
			open_until = CASE WHEN `+successCloses+` THEN NULL ELSE open_until END,
			probe_until = CASE WHEN `+successCloses+` THEN NULL ELSE probe_until END,
			updated_at = CASE WHEN `+successCloses+` THEN now() ELSE updated_at END
		FROM prev
		WHERE name = $1 AND (`+successCloses+` OR last_success_at IS NULL OR last_success_at < now() - interval '1 second')
		RETURNING prev.was, state`, name).Scan(&c.From, &c.To)
	if err == pgx.ErrNoRows {
		return BreakerChange{}, nil // nothing to write, or no such breaker
	}
	if err != nil {
		return BreakerChange{}, fmt.Errorf("store: record success on circuit breaker %q: %w", name, err)
	}
	return c, nil
}

// BreakerFailure counts a failed call: the threshold of consecutive
// failures opens a closed breaker, and a failed probe reopens a half-open
// one with its cool-off doubled (capped). It returns the state after.
func (s *Store) BreakerFailure(ctx context.Context, name, errMsg string) (string, error) {
	c, err := s.BreakerFailed(ctx, name, errMsg)
	return c.To, err
}

// BreakerFailed is BreakerFailure, also saying the state before: from
// closed or half_open to open when the failure opened the breaker.
func (s *Store) BreakerFailed(ctx context.Context, name, errMsg string) (BreakerChange, error) {
	return s.BreakerFailedWith(ctx, name, FailedCall{Error: errMsg})
}

// BreakerFailedWith is BreakerFailed, also recording the failure's error
// class and the wait the downstream asked for, which tell a downstream
// limiting its rate from one that is down.
func (s *Store) BreakerFailedWith(ctx context.Context, name string, f FailedCall) (BreakerChange, error) {
	var c BreakerChange
	var retryAfterMs *int64
	if f.RetryAfter > 0 {
		ms := f.RetryAfter.Milliseconds()
		retryAfterMs = &ms
	}
	var class *string
	if f.Class != "" {
		cl := truncate(f.Class, 200)
		class = &cl
	}
	var until *time.Time
	var probeInMs *int64
	err := s.db.QueryRow(ctx, `
		UPDATE pgbus.circuit_breakers b SET
			consecutive_failures = b.consecutive_failures + 1,
			last_error = left($2, 1000),
			last_error_class = $3,
			last_retry_after_ms = $4,
			last_failure_at = now(),
			state = CASE WHEN o.opens THEN 'open' ELSE b.state END,
			current_cool_off_ms = o.cool_off,
			opened_at = CASE WHEN o.opens THEN now() ELSE b.opened_at END,
			open_until = CASE WHEN o.opens THEN now() + o.cool_off * interval '1 millisecond' ELSE b.open_until END,
			probe_until = CASE WHEN o.opens THEN NULL ELSE b.probe_until END,
			updated_at = now()
		FROM (SELECT name, state AS was,
		             state = 'half_open' OR (state = 'closed' AND consecutive_failures + 1 >= failure_threshold) AS opens,
		             CASE WHEN state = 'half_open' THEN least(current_cool_off_ms * 2, max_cool_off_ms) ELSE current_cool_off_ms END AS cool_off
		      FROM pgbus.circuit_breakers WHERE name = $1 FOR UPDATE) o
		WHERE b.name = o.name
		RETURNING o.was, b.state, b.consecutive_failures, b.open_until,
		          greatest(0, ceil(extract(epoch FROM b.open_until - clock_timestamp()) * 1000))::bigint`,
		name, s.textFit(ctx).apply(truncate(f.Error, 1000)), class, retryAfterMs).Scan(&c.From, &c.To, &c.Failures, &until, &probeInMs)
	if err == pgx.ErrNoRows {
		return BreakerChange{}, notFoundf("circuit breaker %q does not exist", name)
	}
	if err != nil {
		return BreakerChange{}, fmt.Errorf("store: record failure on circuit breaker %q: %w", name, err)
	}
	if until != nil {
		c.OpenUntil = *until
	}
	if probeInMs != nil {
		c.ProbeIn = time.Duration(*probeInMs) * time.Millisecond
	}
	return c, nil
}

// handOpenedSQL is who opened the breaker of table alias b by hand, NULL
// when its open period is not the one that opening set: an older pgbus
// that closed or reopened it since left opened_by behind.
func handOpenedSQL(b, col string) string {
	return `CASE WHEN ` + b + `.state = 'open' AND ` + b + `.opened_by_hand_until IS NOT DISTINCT FROM ` + b + `.open_until THEN ` + b + `.` + col + ` END`
}

// ListBreakers returns the circuit breakers by name, and their users by
// queue and kind, byte by byte whatever the database's collation: every
// one when name is empty, else only the one of that name (none when it
// does not exist).
func (s *Store) ListBreakers(ctx context.Context, name string) ([]BreakerState, error) {
	// A user's seen_at travels in JSON, which would write it in the
	// session's zone: it is written in UTC, as the other times come.
	rows, err := s.reads.Query(ctx, `SELECT name, state, consecutive_failures, failure_threshold, cool_off_ms / 1000.0,
			current_cool_off_ms / 1000.0, max_cool_off_ms / 1000.0, opened_at, open_until, last_error, updated_at,
			last_success_at, last_failure_at, coalesce(`+handOpenedSQL("b", "opened_by")+`, ''), coalesce(`+handOpenedSQL("b", "open_reason")+`, ''),
			coalesce(last_error_class, ''), coalesce(last_retry_after_ms, 0),
			coalesce((SELECT jsonb_agg(jsonb_build_object('queue', u.queue_name, 'kind', u.kind, 'seen_at', `+sqlDeadISO("u.seen_at")+`)
				ORDER BY u.queue_name COLLATE "C", u.kind COLLATE "C") FROM pgbus.circuit_breaker_users u
				WHERE u.breaker = b.name AND u.seen_at > now() - $2 * interval '1 microsecond'), '[]')
		FROM pgbus.circuit_breakers b WHERE $1 = '' OR b.name = $1 ORDER BY name COLLATE "C"`, name, BreakerUsersWindow.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("store: list circuit breakers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[BreakerState])
	if err != nil {
		return nil, fmt.Errorf("store: list circuit breakers: %w", err)
	}
	return out, nil
}

// BreakerUsersRefresh is how often a running process says again which
// breakers its handlers use, so that ListBreakers can tell current users
// from those of processes gone or reconfigured.
const BreakerUsersRefresh = time.Hour

// BreakerUsersWindow is how recently a user must have been seen for
// ListBreakers to list it: the window of the list of worker processes.
const BreakerUsersWindow = 24 * time.Hour

// RecordBreakerUsers records the queues and kinds whose handlers use a
// breaker, for the list of breakers.
func (s *Store) RecordBreakerUsers(ctx context.Context, name string, users []BreakerUser) error {
	queues, kinds := make([]string, len(users)), make([]string, len(users))
	for i, u := range users {
		queues[i], kinds[i] = u.Queue, u.Kind
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO pgbus.circuit_breaker_users (breaker, queue_name, kind)
		SELECT $1, q, k FROM unnest($2::text[], $3::text[]) AS t(q, k)
		ON CONFLICT (breaker, queue_name, kind) DO UPDATE SET seen_at = now()`, name, queues, kinds)
	if err != nil {
		return fmt.Errorf("store: record the users of circuit breaker %q: %w", name, err)
	}
	return nil
}

// BreakerUse is the circuit breaker a running process's handler of one
// queue and kind uses: Kind empty for the queue's default handler,
// Breaker empty for a handler without one.
type BreakerUse struct {
	Queue, Kind, Breaker string
}

// ForgetOtherBreakerUsers removes the users recorded for the queues and
// kinds of uses under other breakers than each one's, as when a handler's
// breaker was turned off or renamed since the last start: the old one
// stayed listed in use for hours, health named it as holding the queue,
// and the jobs it held waited out its whole open period. Those jobs run
// now, in each queue that no recorded user of the old breaker names any
// more (a process that still runs the old configuration says again at its
// next heartbeat that it uses it, and snoozes them again), and so do the
// jobs held in the queues of uses by any breaker no user names there. It
// returns how many it made visible, by breaker.
func (s *Store) ForgetOtherBreakerUsers(ctx context.Context, uses []BreakerUse) (map[string]int64, error) {
	queues, kinds, names := make([]string, len(uses)), make([]string, len(uses)), make([]string, len(uses))
	for i, u := range uses {
		queues[i], kinds[i], names[i] = u.Queue, u.Kind, u.Breaker
	}
	// The statement's own deletions are not visible to its NOT EXISTS,
	// which passes over the rows it deletes by hand.
	rows, err := s.db.Query(ctx, `
		WITH gone AS (
			DELETE FROM pgbus.circuit_breaker_users u
			USING unnest($1::text[], $2::text[], $3::text[]) AS t(q, k, b)
			WHERE u.queue_name = t.q AND u.kind = t.k AND u.breaker <> t.b
			RETURNING u.breaker, u.queue_name, u.kind)
		SELECT DISTINCT g.breaker, g.queue_name FROM gone g
		WHERE NOT EXISTS (SELECT 1 FROM pgbus.circuit_breaker_users r
			WHERE r.breaker = g.breaker AND r.queue_name = g.queue_name
			AND NOT EXISTS (SELECT 1 FROM gone d WHERE d.breaker = r.breaker AND d.queue_name = r.queue_name AND d.kind = r.kind))
		ORDER BY 1, 2`, queues, kinds, names)
	if err != nil {
		return nil, fmt.Errorf("store: forget the circuit breakers this process's handlers no longer use: %w", err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Breaker, Queue string }])
	if err != nil {
		return nil, fmt.Errorf("store: forget the circuit breakers this process's handlers no longer use: %w", err)
	}
	ran := map[string]int64{}
	for _, l := range left {
		if ValidatePhysicalName(l.Queue) != nil {
			continue
		}
		levels, err := s.liveLevels(ctx, l.Queue)
		if err != nil {
			return ran, err
		}
		names := make([]string, len(levels))
		for i, lv := range levels {
			names[i] = lv.queue
		}
		n, err := s.runHeldIn(ctx, l.Breaker, names)
		if n > 0 {
			ran[l.Breaker] += n
		}
		if err != nil {
			return ran, err
		}
	}
	return ran, s.runOrphanHolds(ctx, uses, ran)
}

// runOrphanHolds runs now, in each queue of uses, the jobs held by a
// breaker that neither uses nor any recorded user names for that queue,
// adding how many to ran by breaker. Such holds come of a rolling restart
// that turns a breaker off: a process still on the old configuration held
// the jobs again after another's start forgot the use, then restarted (or
// stopped) before its heartbeat recorded the use again, so no start had a
// use to forget and the jobs waited out the breaker's whole open period,
// unseen by the views, which look in its users' queues.
func (s *Store) runOrphanHolds(ctx context.Context, uses []BreakerUse, ran map[string]int64) error {
	own := map[string]map[string]bool{} // queue -> breakers this process uses on it
	for _, u := range uses {
		if own[u.Queue] == nil {
			own[u.Queue] = map[string]bool{}
		}
		own[u.Queue][u.Breaker] = true
	}
	for queue, breakers := range own {
		if ValidatePhysicalName(queue) != nil {
			continue
		}
		levels, err := s.liveLevels(ctx, queue)
		if err != nil {
			return err
		}
		names := make([]string, len(levels))
		held := map[string]int64{}
		for i, lv := range levels {
			names[i] = lv.queue
			// A table the role may not read is passed over: the workers'
			// reads of it say what to grant, with advice this start
			// would cut short.
			if err := s.countHeld(ctx, lv.queue, "", held); err != nil && !IsPermissionDenied(err) {
				return err
			}
		}
		for breaker := range held {
			if breakers[breaker] {
				continue
			}
			var used bool
			if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgbus.circuit_breaker_users WHERE breaker = $1 AND queue_name = $2)`,
				breaker, queue).Scan(&used); err != nil {
				return fmt.Errorf("store: read the users of circuit breaker %q: %w", breaker, err)
			}
			if used {
				continue
			}
			n, err := s.runHeldIn(ctx, breaker, names)
			if n > 0 {
				ran[breaker] += n
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// TouchBreakerUsers marks users as seen now, for a running process that
// has them, writing only the rows not seen within BreakerUsersRefresh, so
// that it can run at every process heartbeat. A user whose row is gone
// (pruned while the process was unheard of for StatsRetention) is recorded
// again.
func (s *Store) TouchBreakerUsers(ctx context.Context, users map[string][]BreakerUser) error {
	var names, queues, kinds []string
	for name, us := range users {
		for _, u := range us {
			names, queues, kinds = append(names, name), append(queues, u.Queue), append(kinds, u.Kind)
		}
	}
	if len(names) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO pgbus.circuit_breaker_users AS u (breaker, queue_name, kind)
		SELECT DISTINCT b, q, k FROM unnest($1::text[], $2::text[], $3::text[]) AS t(b, q, k)
		ORDER BY b, q, k
		ON CONFLICT (breaker, queue_name, kind) DO UPDATE SET seen_at = now()
		WHERE u.seen_at < now() - $4 * interval '1 microsecond'`, names, queues, kinds, BreakerUsersRefresh.Microseconds())
	if err != nil {
		return fmt.Errorf("store: mark the circuit breaker users of this process seen: %w", err)
	}
	return nil
}

// BreakerWas is what a breaker was before a reset or an opening by hand:
// its state, the failures it had counted in a row, and who had opened it
// by hand and why, when its open period was one opened by hand.
type BreakerWas struct {
	State               string
	ConsecutiveFailures int
	OpenedBy            string
	OpenReason          string
	// OpenUntil is when its open period was to end, nil for none.
	OpenUntil *time.Time
	// HeldUntil bounds the snoozes of the jobs it held: the end of its
	// open period, or, half-open, of its probe's (when the probe is taken
	// for lost), whichever is later; nil for none. A probe may run far
	// past the open period's end, and the jobs held beside it wait for it.
	HeldUntil *time.Time
	// Kept is true of a reset that left the breaker as it was: opened by
	// hand, that window not over, and not asked to end it.
	Kept bool
}

// ResetBreaker closes a breaker by hand, clearing its failures, and
// returns what it was. A breaker opened by hand whose window is not over
// is a person's decision: it is closed only when endOpeningByHand is set,
// and otherwise kept as it is (BreakerWas.Kept).
func (s *Store) ResetBreaker(ctx context.Context, name string, endOpeningByHand bool) (BreakerWas, error) {
	var was BreakerWas
	err := s.db.QueryRow(ctx, `
		WITH old AS (SELECT name, state, consecutive_failures, `+handOpenedSQL("c", "opened_by")+` AS opened_by, `+handOpenedSQL("c", "open_reason")+` AS open_reason, open_until, probe_until
			FROM pgbus.circuit_breakers c WHERE name = $1 FOR UPDATE),
		reset AS (
			UPDATE pgbus.circuit_breakers b SET state = 'closed', consecutive_failures = 0, current_cool_off_ms = cool_off_ms,
				opened_at = NULL, open_until = NULL, probe_until = NULL, updated_at = now(), opened_by = NULL, open_reason = NULL, opened_by_hand_until = NULL
			FROM old WHERE b.name = old.name AND ($2 OR old.opened_by IS NULL OR old.open_until <= now())
			RETURNING 1)
		SELECT old.state, old.consecutive_failures, coalesce(old.opened_by, ''), coalesce(old.open_reason, ''), old.open_until,
			greatest(old.open_until, old.probe_until), NOT EXISTS (SELECT 1 FROM reset)
		FROM old`, name, endOpeningByHand).
		Scan(&was.State, &was.ConsecutiveFailures, &was.OpenedBy, &was.OpenReason, &was.OpenUntil, &was.HeldUntil, &was.Kept)
	if errors.Is(err, pgx.ErrNoRows) {
		return BreakerWas{}, BreakerMissing(name)
	}
	if err != nil {
		return BreakerWas{}, fmt.Errorf("store: reset circuit breaker %q: %w", name, err)
	}
	return was, nil
}

// MaxOpenByHand is the longest OpenBreaker holds a breaker open: the
// longest cool-off a breaker may have.
const MaxOpenByHand = 7 * 24 * time.Hour

// MaxOpenReason is the longest reason an opening by hand keeps, in bytes.
const MaxOpenReason = 500

// BreakerOpening is an opening of a breaker by hand: for how long, who
// opened it (as the audit log names callers) and why, which the breaker
// shows until that open period ends.
type BreakerOpening struct {
	For    time.Duration
	By     string
	Reason string
}

// breakersMade ends the refusal of a breaker by a name none has: where
// breakers come from, for someone who typed a name in advance.
const breakersMade = ": a breaker exists once a worker whose handler uses it has started, under the name its options give it"

// BreakerMissing is the error (ErrNotFound) of a call on breaker name
// when no breaker has that name, as ResetBreaker and OpenBreaker give it.
func BreakerMissing(name string) error {
	return notFoundf("circuit breaker %q does not exist"+breakersMade, name)
}

// OpenBreaker opens a breaker by hand, as for a downstream known to be
// down or under maintenance: the jobs that meet it are held (snoozed, no
// attempt used) until o.For has passed, when the next one probes it, as
// after a cool-off. A probe under way meanwhile leaves it open whatever
// its outcome. An opening that ends an open period sooner brings the jobs
// held until its old end in to the new one. It returns what the breaker
// was and when it lets a probe through.
func (s *Store) OpenBreaker(ctx context.Context, name string, o BreakerOpening) (BreakerWas, time.Time, error) {
	switch {
	case o.For < time.Second || o.For > MaxOpenByHand:
		return BreakerWas{}, time.Time{}, invalidf("open circuit breaker %q for %s: give 1s to %s", name, o.For, MaxOpenByHand)
	case o.By == "" || len(o.By) > MaxAuditName:
		return BreakerWas{}, time.Time{}, invalidf("open circuit breaker %q: say who opens it, in 1 to %d bytes", name, MaxAuditName)
	case len(o.Reason) > MaxOpenReason:
		return BreakerWas{}, time.Time{}, invalidf("open circuit breaker %q: the reason is %d bytes, over the %d it may have", name, len(o.Reason), MaxOpenReason)
	}
	var was BreakerWas
	var until time.Time
	var shortened *time.Time // the end of the open period this one cut short
	err := s.db.QueryRow(ctx, `
		WITH old AS (SELECT name, state, consecutive_failures, `+handOpenedSQL("c", "opened_by")+` AS opened_by, `+handOpenedSQL("c", "open_reason")+` AS open_reason, open_until
			FROM pgbus.circuit_breakers c WHERE name = $1 FOR UPDATE)
		UPDATE pgbus.circuit_breakers b SET state = 'open', opened_at = CASE WHEN old.state = 'closed' THEN now() ELSE coalesce(b.opened_at, now()) END,
			open_until = now() + $2 * interval '1 millisecond', probe_until = NULL, updated_at = now(),
			opened_by = $3, open_reason = nullif($4, ''), opened_by_hand_until = now() + $2 * interval '1 millisecond'
		FROM old WHERE b.name = old.name
		RETURNING old.state, old.consecutive_failures, coalesce(old.opened_by, ''), coalesce(old.open_reason, ''), b.open_until,
			CASE WHEN old.state = 'open' AND old.open_until > b.open_until THEN old.open_until END`,
		name, o.For.Milliseconds(), o.By, o.Reason).Scan(&was.State, &was.ConsecutiveFailures, &was.OpenedBy, &was.OpenReason, &until, &shortened)
	if errors.Is(err, pgx.ErrNoRows) {
		return BreakerWas{}, time.Time{}, BreakerMissing(name)
	}
	if err != nil {
		return BreakerWas{}, time.Time{}, fmt.Errorf("store: open circuit breaker %q: %w", name, err)
	}
	// Jobs held until the end of the period this one cut short come out
	// with it.
	if shortened == nil {
		return was, until, nil
	}
	if _, err := s.capHolds(ctx, name, until, *shortened); err != nil {
		return was, until, fmt.Errorf("circuit breaker %q is open until %s, but jobs it held before may wait past that: reset it to run them: %w",
			name, until.UTC().Format(time.RFC3339), err)
	}
	return was, until, nil
}
