package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// breakerHeldSQL is the condition that the message of a queue table
// aliased q, not yet visible, waits out a snooze of an open circuit
// breaker: it carries HeaderBreakerHold at the read count it still has. A
// read since (by another client, which leaves the mark) counted one more.
const breakerHeldSQL = `coalesce(q.headers->'` + HeaderBreakerHold + `'->>'read_ct' = q.read_ct::text, false)`

// breakerHeldBySQL is the name of the breaker that holds the message of
// a queue table aliased q, empty for a message no breaker holds.
const breakerHeldBySQL = `CASE WHEN ` + breakerHeldSQL + ` THEN coalesce(q.headers->'` + HeaderBreakerHold + `'->>'breaker', '') ELSE '' END`

// holdSQL is headers with the mark of the breaker named by the SQL
// breaker, holding at read count readCt (HeaderBreakerHold). Headers that
// are no JSON object but null, another client's (an array, a string), are
// kept whole under HeaderOriginalHeaders beside the mark, which says so
// ("wraps"), for dropBreakerHoldSQL to give them back; JSON null is taken
// for no headers, as mergeHeaderSQL takes it.
func holdSQL(headers, breaker, readCt string) string {
	mark := `jsonb_build_object('breaker', ` + breaker + `, 'read_ct', ` + readCt + `)`
	return `CASE
		WHEN ` + headers + ` IS NULL OR jsonb_typeof(` + headers + `) = 'null' THEN jsonb_build_object('` + HeaderBreakerHold + `', ` + mark + `)
		WHEN jsonb_typeof(` + headers + `) = 'object' THEN ` + headers + ` || jsonb_build_object('` + HeaderBreakerHold + `', ` + mark + `)
		ELSE jsonb_build_object('` + HeaderOriginalHeaders + `', ` + headers + `,
			'` + HeaderBreakerHold + `', ` + mark + ` || '{"wraps": true}')
	END`
}

// dropBreakerHoldSQL is the headers of the row aliased alias without
// HeaderBreakerHold: once a message runs (or is run now) no breaker holds
// it. Headers the mark wraps (holdSQL) are given back as they were.
// Headers that are not an object are another client's, left alone.
func dropBreakerHoldSQL(alias string) string {
	h := alias + `.headers`
	return `CASE WHEN jsonb_typeof(` + h + `) <> 'object' OR NOT ` + h + ` ? '` + HeaderBreakerHold + `' THEN ` + h + `
		WHEN ` + h + `->'` + HeaderBreakerHold + `'->'wraps' = 'true' AND ` + h + ` ? '` + HeaderOriginalHeaders + `' THEN ` + h + `->'` + HeaderOriginalHeaders + `'
		ELSE ` + h + ` - '` + HeaderBreakerHold + `' END`
}

// RunHeldNow releases the messages that the circuit breaker named held
// back while it was open and that still wait out that snooze, in every
// queue its users name (every level of a queue with priority levels), as
// after a reset of the breaker: they run now rather than at the end of
// their snooze, which may be the breaker's whole cool-off, the first
// ReleaseAtOnce at once and the rest spread over the breaker's release
// window (releaseHeld), so that a downstream that limits its rate or
// concurrency does not open it again. So does it in the other queues
// where it holds messages until heldUntil, the latest its holds wait
// until as it was (BreakerWas.HeldUntil: the end of its open period or of
// its probe; nil for none), or sooner: a process that stopped for good
// during a rolling restart that turned the breaker off left them held
// where no user names it any more. A queue dropped since is passed over. It returns how many it released; on an error, how
// many it released before it, which stay so.
func (s *Store) RunHeldNow(ctx context.Context, breaker string, heldUntil *time.Time) (int64, error) {
	levels, err := s.breakerLevels(ctx, breaker)
	if err != nil {
		return 0, err
	}
	others, err := s.heldElsewhere(ctx, breaker, heldUntil, levels)
	if err != nil {
		return 0, err
	}
	n, err := s.releaseHeld(ctx, breaker, append(levels, others...), heldRange{})
	if err != nil {
		return n, fmt.Errorf("store: run the jobs circuit breaker %q held: %w", breaker, err)
	}
	return n, nil
}

// heldElsewhere lists the physical queues, other than known, where the
// breaker named holds messages that become visible by heldUntil (or now)
// and holdSlack: a small read per queue, through the vt index, heldBatch
// queues to a statement (one statement a queue made a reset with 2,000
// queues take ten times as long).
func (s *Store) heldElsewhere(ctx context.Context, breaker string, heldUntil *time.Time, known []string) ([]string, error) {
	queues, err := s.ListQueues(ctx)
	if err != nil {
		return nil, err
	}
	var look []string
	for _, q := range queues {
		if !slices.Contains(known, q.Name) && !strings.HasSuffix(q.Name, DLQSuffix) && ValidatePhysicalName(q.Name) == nil {
			look = append(look, q.Name)
		}
	}
	var out []string
	for batch := range slices.Chunk(look, heldBatch) {
		held, err := s.heldIn(ctx, breaker, heldUntil, batch)
		if skippable(err) {
			// A table dropped since it was listed, or not this role's to
			// read, fails the whole statement: each is read alone, and
			// the holds in those this role may read still run.
			held, err = nil, nil
			for _, q := range batch {
				one, qerr := s.heldIn(ctx, breaker, heldUntil, []string{q})
				if qerr != nil && !skippable(qerr) {
					err = qerr
					break
				}
				held = append(held, one...)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("store: look for the messages circuit breaker %q holds: %w", breaker, err)
		}
		out = append(out, held...)
	}
	return out, nil
}

// skippable reports whether err is of a queue table dropped since it was
// listed, or one this role may not read.
func skippable(err error) bool { return isUndefinedTable(err) || IsPermissionDenied(err) }

// heldBatch is how many queue tables one statement of heldElsewhere reads.
const heldBatch = 50

// heldIn returns those of queues where the breaker named holds messages
// that become visible by heldUntil (or now) and holdSlack, in one
// statement. Its text changes with the tables, so it is not prepared.
func (s *Store) heldIn(ctx context.Context, breaker string, heldUntil *time.Time, queues []string) ([]string, error) {
	var sql strings.Builder
	for i, q := range queues {
		if i > 0 {
			sql.WriteString("\nUNION ALL\n")
		}
		fmt.Fprintf(&sql, `SELECT %d WHERE EXISTS (SELECT 1 FROM %s q
			WHERE q.vt > now() AND q.vt <= greatest($2::timestamptz, now()) + $3 * interval '1 microsecond'
			AND %s AND q.headers->'%s'->>'breaker' = $1::text)`, i, queueTable(q), breakerHeldSQL, HeaderBreakerHold)
	}
	// Without JIT, as a depth read: the estimates of a statement over
	// many tables add up to a cost that has it compiled, for seconds.
	var found []int32
	err := pgx.BeginTxFunc(ctx, s.reads, depthTx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql.String(), pgx.QueryExecModeExec, breaker, heldUntil, holdSlack.Microseconds())
		if err != nil {
			return err
		}
		found, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = queues[n]
	}
	return out, nil
}

// runHeldIn makes visible now the messages of the physical queues levels
// that the circuit breaker named holds. A queue dropped since is passed
// over.
func (s *Store) runHeldIn(ctx context.Context, breaker string, levels []string) (int64, error) {
	held := func(after string) string {
		return `q.vt > now() AND q.msg_id > ` + after + ` AND ` + breakerHeldSQL + ` AND q.headers->'` + HeaderBreakerHold + `'->>'breaker' = $2::text`
	}
	var total int64
	for _, level := range levels {
		n, err := s.visibleNowInBatches(ctx, level, held, breaker, nil)
		total += n
		if err != nil && !isUndefinedTable(err) { // a queue dropped since its users were recorded
			return total, fmt.Errorf("store: run now the messages circuit breaker %q held in %s: %w", breaker, level, err)
		}
	}
	return total, nil
}

// breakerWakeSQL is when the jobs held by the circuit breaker row aliased
// b may next be read, as it stands: at once when it is closed, at the end
// of its open period when open, when its probe is taken for lost while
// half-open. It may be past.
func breakerWakeSQL(b string) string {
	return `CASE ` + b + `.state WHEN 'open' THEN ` + b + `.open_until WHEN 'half_open' THEN ` + b + `.probe_until ELSE now() END`
}

// WakeProbeHolds moves the jobs that the circuit breaker named held while
// its probe probeUntil (BreakerVerdict.ProbeUntil) ran, which wait until
// that probe is taken for lost, to where the breaker now stands, for the
// process that ran the probe once it ended: released (releaseHeld) when it
// closed, visible at once when the probe was given back (so that the next
// job probes), to the end of the new open period when the probe failed,
// to the next probe's end when another one runs. So a held job is snoozed
// once per probe, not read again and again while the probe runs, and
// still runs as soon as the breaker lets it. heldFrom is the end of the
// open period the probe followed (BreakerVerdict.HeldFrom): the jobs held
// until then that no worker read yet, visible since, are moved too, so
// that a closing releases them with the others rather than every worker
// running them at once; zero looks only at the jobs not yet visible. It
// looks in the queues of the breaker's users (every level), through the
// vt index, in batches that each commit; a queue dropped since is passed
// over. Should the process die first, the holds wake when the probe is
// taken for lost. It returns how many it moved; on an error, how many it
// moved before it, which stay so.
func (s *Store) WakeProbeHolds(ctx context.Context, breaker string, probeUntil, heldFrom time.Time) (int64, error) {
	levels, err := s.breakerLevels(ctx, breaker)
	if err != nil {
		return 0, err
	}
	r := heldRange{until: &probeUntil}
	if !heldFrom.IsZero() {
		r.from = &heldFrom
	}
	n, err := s.releaseHeld(ctx, breaker, levels, r)
	if err != nil {
		return n, fmt.Errorf("store: wake the jobs circuit breaker %q held while it probed: %w", breaker, err)
	}
	return n, nil
}

// Bounds of the release of the jobs a breaker held, once it closes.
const (
	// ReleaseAtOnce is how many of them run at once: as many or fewer all
	// do, and of more this many first, the rest spread over the window.
	ReleaseAtOnce = 50
	// MaxReleaseWindow bounds the window, so that the last job held waits
	// minutes at most after the breaker closed (and is still counted
	// among those it holds: within holdSlack).
	MaxReleaseWindow = 5 * time.Minute
)

// releaseWindowSQL is the window over which the breaker row aliased c
// spreads the jobs it held once it closes, in milliseconds: the wait its
// last failure's Retry-After asked for, when it gave one, else its
// cool-off; at most its longest cool-off and MaxReleaseWindow ($2, in
// milliseconds).
func releaseWindowSQL(c string) string {
	return `least(coalesce(nullif(` + c + `.last_retry_after_ms, 0), ` + c + `.cool_off_ms), ` + c + `.max_cool_off_ms, $2::bigint)`
}

// heldRange bounds the visibility times of the holds a release moves:
// from (at or after it; nil for those not yet visible) and until (by it
// and holdSlack; nil for no bound).
type heldRange struct {
	from, until *time.Time
}

// heldRangeSQL is the condition of heldRange on the queue table aliased
// q, its from, until and holdSlack (in microseconds) the SQL given: one
// range of the vt index.
func heldRangeSQL(from, until, slack string) string {
	return `q.vt >= coalesce(` + from + `::timestamptz, now() + interval '1 microsecond')
		AND q.vt <= coalesce(` + until + `::timestamptz + ` + slack + ` * interval '1 microsecond', 'infinity')`
}

// releasePlan is how a release spreads the jobs it moves while their
// breaker is closed: from start over window, the first ReleaseAtOnce of
// total at once.
type releasePlan struct {
	start  time.Time
	window time.Duration
	total  int64
}

// releaseHeld moves the jobs the circuit breaker named holds in the
// physical queues levels, within r, as the breaker stands: while it is
// closed (or gone) they are released, each queue's in msg_id order (the
// order they were sent), the first ReleaseAtOnce of them all made
// visible at once and the rest spread evenly over the breaker's release
// window (releaseWindowSQL), the last at its end, so that a downstream
// that limits its rate or concurrency is not met with every job held at
// once, which opened the breaker again; those spread keep their hold, so
// that they are counted held and a reset finds them. While it is open or
// half-open (opened again meanwhile) they wait for it instead, as
// SnoozeMany would have them wait. A queue dropped since is passed over.
// It returns how many it moved; on an error, how many it moved before it,
// which stay so.
func (s *Store) releaseHeld(ctx context.Context, breaker string, levels []string, r heldRange) (int64, error) {
	var plan releasePlan
	var state string
	var windowMs int64
	if err := s.db.QueryRow(ctx, `SELECT clock_timestamp(), coalesce(c.state, 'closed'), coalesce(`+releaseWindowSQL("c")+`, 0)
		FROM (SELECT 1) AS one LEFT JOIN pgbus.circuit_breakers c ON c.name = $1`, breaker, MaxReleaseWindow.Milliseconds()).
		Scan(&plan.start, &state, &windowMs); err != nil {
		return 0, fmt.Errorf("read circuit breaker %q: %w", breaker, err)
	}
	plan.window = time.Duration(windowMs) * time.Millisecond
	counts := make([]int64, len(levels))
	if state == BreakerClosed && plan.window > 0 {
		for i, level := range levels {
			err := s.db.QueryRow(ctx, `SELECT count(*) FROM `+queueTable(level)+` q
				WHERE `+heldRangeSQL("$2", "$3", "$4")+` AND `+breakerHeldSQL+` AND q.headers->'`+HeaderBreakerHold+`'->>'breaker' = $1::text`,
				breaker, r.from, r.until, holdSlack.Microseconds()).Scan(&counts[i])
			if err != nil && !isUndefinedTable(err) { // a queue dropped since its users were recorded
				return 0, fmt.Errorf("count the jobs it holds in %s: %w", level, err)
			}
			plan.total += counts[i]
		}
	}
	var total int64
	for i, level := range levels {
		n, err := s.releaseHeldIn(ctx, level, breaker, r, plan, counts[i])
		total += n
		if err != nil && !isUndefinedTable(err) {
			return total, fmt.Errorf("move the jobs it held in %s: %w", level, err)
		}
	}
	return total, nil
}

// releaseHeldIn is releaseHeld for one physical queue, of whose holds
// count were counted for plan, in batches of runNowBatch in msg_id order,
// as visibleNowInBatches. The breaker's row is read locked, as SnoozeMany
// reads it: a reset or a reopening that commits meanwhile is seen by the
// next batch, and its own wake of the holds finds what this one moved. A
// job made visible at once has its hold taken off, and the queue's
// workers are woken; those spread are found by the workers' reads.
func (s *Store) releaseHeldIn(ctx context.Context, queue, breaker string, r heldRange, plan releasePlan, count int64) (int64, error) {
	// The offset of the i-th (from 0) of count in the window, in
	// microseconds: its rank among the plan's total, each queue's spread
	// over the whole window, past the first ReleaseAtOnce.
	offset := `CASE WHEN $8::bigint <= $10::bigint OR $11::bigint <= 0 THEN 0
		ELSE least($11::bigint, floor($11::float8 * greatest(0, ($12::bigint + p.ord - 1)::float8 * $8::bigint / greatest($9::bigint, 1) - $10::bigint + 1)
			/ ($8::bigint - $10::bigint)))::bigint END`
	sql := `WITH c AS MATERIALIZED (
			SELECT c.state, greatest(` + breakerWakeSQL("c") + `, now()) AS wake FROM pgbus.circuit_breakers c WHERE c.name = $2 FOR SHARE
		), b AS MATERIALIZED (
			SELECT coalesce((SELECT state FROM c), 'closed') AS state, coalesce((SELECT wake FROM c), now()) AS wake
		), picked AS (
			SELECT q.msg_id FROM ` + queueTable(queue) + ` q, b
			WHERE ` + heldRangeSQL("$3", "$4", "$5") + ` AND q.vt <> b.wake AND q.msg_id > $6
			AND ` + breakerHeldSQL + ` AND q.headers->'` + HeaderBreakerHold + `'->>'breaker' = $2::text
			ORDER BY q.msg_id LIMIT $7 FOR UPDATE OF q SKIP LOCKED
		), spread AS (
			SELECT p.id, CASE WHEN b.state = 'closed' THEN ` + offset + ` END AS off
			FROM b, unnest(ARRAY(SELECT msg_id FROM picked ORDER BY msg_id)) WITH ORDINALITY AS p(id, ord)
		), moved AS (
			UPDATE ` + queueTable(queue) + ` q SET
				vt = CASE WHEN s.off IS NOT NULL THEN $13::timestamptz + s.off * interval '1 microsecond'
					WHEN b.wake <= now() THEN clock_timestamp() ELSE b.wake END,
				headers = CASE WHEN s.off = 0 OR (s.off IS NULL AND b.wake <= now()) THEN ` + dropBreakerHoldSQL("q") + ` ELSE q.headers END
			FROM b, spread s WHERE q.msg_id = s.id
			RETURNING coalesce(s.off = 0, b.wake <= now()) AS visible
		), n AS (SELECT count(*) AS n, coalesce(bool_or(visible), false) AS woke FROM moved)
		SELECT n.n, coalesce((SELECT max(msg_id) FROM picked), 0)
		FROM n, LATERAL (SELECT CASE WHEN n.woke THEN pg_notify('` + notifyChannel + `', $1::text) END) AS woken`
	var total, after int64
	for {
		var n int64
		if err := s.db.QueryRow(ctx, sql, queue, breaker, r.from, r.until, holdSlack.Microseconds(), after, runNowBatch,
			plan.total, count, ReleaseAtOnce, plan.window.Microseconds(), total, plan.start).Scan(&n, &after); err != nil {
			return total, err
		}
		total += n
		if n < int64(runNowBatch) {
			return total, nil
		}
	}
}

// capHolds brings in the messages the breaker named holds that wait past
// until, to until: an opening by hand that shortens the breaker's open
// period, which was to end at was, would otherwise leave the jobs held
// before waiting out the longer one, after the breaker probed and closed.
// Only messages visible by was (and holdSlack) are looked at, through the
// vt index; their rows are locked in msg_id order, as a worker's batch
// writes lock theirs, not in the order of the index. It returns how many
// it moved.
func (s *Store) capHolds(ctx context.Context, breaker string, until, was time.Time) (int64, error) {
	levels, err := s.breakerLevels(ctx, breaker)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, level := range levels {
		held := `q.vt > $2 AND q.vt <= $3 AND ` + breakerHeldSQL + ` AND q.headers->'` + HeaderBreakerHold + `'->>'breaker' = $1::text`
		tag, err := s.db.Exec(ctx, `WITH `+lockInOrderSQL(queueTable(level), held, "NO KEY UPDATE")+`
			UPDATE `+queueTable(level)+` q SET vt = $2 WHERE `+held+` AND `+sqlLocked,
			breaker, until, was.Add(holdSlack))
		if err != nil && !isUndefinedTable(err) { // a queue dropped since its users were recorded
			return total, fmt.Errorf("store: bring the jobs circuit breaker %q holds in %s in to %s: %w", breaker, level, until.UTC().Format(time.RFC3339), err)
		}
		total += tag.RowsAffected()
	}
	return total, nil
}

// breakerLevels lists the physical queues of the queues whose handlers
// use the breaker named (any breaker, when name is empty), as its users
// recorded them: every level of a queue with priority levels, each once.
// A name no queue can have is passed over.
func (s *Store) breakerLevels(ctx context.Context, name string) ([]string, error) {
	rows, err := s.reads.Query(ctx, `SELECT DISTINCT queue_name FROM pgbus.circuit_breaker_users WHERE $1 = '' OR breaker = $1 ORDER BY 1`, name)
	if err != nil {
		return nil, fmt.Errorf("store: read the queues of circuit breaker %q: %w", name, err)
	}
	queues, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: read the queues of circuit breaker %q: %w", name, err)
	}
	var out []string
	for _, queue := range queues {
		if ValidatePhysicalName(queue) != nil {
			continue
		}
		levels, err := s.liveLevels(ctx, queue)
		if err != nil {
			return nil, err
		}
		for _, l := range levels {
			// A worker may name a level (orders_p1) as well as its
			// queue: each level is looked in once.
			if !slices.Contains(out, l.queue) {
				out = append(out, l.queue)
			}
		}
	}
	return out, nil
}

// HeldByBreaker counts the messages each circuit breaker holds
// (HeaderBreakerHold) in the queues of its users, every level of a queue
// with priority levels: of every breaker when name is empty, else of the
// one named. A breaker that holds none is not in the map. A queue dropped
// since is passed over.
func (s *Store) HeldByBreaker(ctx context.Context, name string) (map[string]int64, error) {
	levels, err := s.breakerLevels(ctx, name)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, level := range levels {
		if err := s.countHeld(ctx, level, name, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// holdSlack is how far past a breaker's open_until a job it held may
// still wait: a worker computes the snooze on its own clock, a little off
// the database's, and the outcome writer writes it a moment later.
const holdSlack = 15 * time.Minute

// heldUntilSQL bounds the visibility time of every message a breaker (or
// the one named, $1) holds: a breaker snoozes a job until its open period
// ends, or while half-open until its probe is taken for lost, and an
// opening by hand that shortens the period brings the holds in with it
// (capHolds). Counting within it reads, through the vt index, the messages
// that become visible before then, not every message sent with a delay of
// days.
const heldUntilSQL = `(SELECT greatest(max(b.open_until), max(b.probe_until), now()) FROM pgbus.circuit_breakers b WHERE $1 = '' OR b.name = $1) + ` +
	`interval '1 microsecond' * $2`

// countHeld adds the messages of one physical queue that each breaker
// (or the one named) holds to counts.
func (s *Store) countHeld(ctx context.Context, queue, name string, counts map[string]int64) error {
	rows, err := s.reads.Query(ctx, `SELECT q.headers->'`+HeaderBreakerHold+`'->>'breaker' AS breaker, count(*)
		FROM `+queueTable(queue)+` q WHERE q.vt > now() AND q.vt <= `+heldUntilSQL+` AND `+breakerHeldSQL+`
		GROUP BY 1 HAVING $1 = '' OR q.headers->'`+HeaderBreakerHold+`'->>'breaker' = $1`, name, holdSlack.Microseconds())
	if err != nil {
		if isUndefinedTable(err) {
			return nil // dropped since its users were recorded
		}
		return queueErr(err, "count the messages circuit breakers hold in", queue)
	}
	type held struct {
		Breaker *string
		N       int64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[held])
	if err != nil {
		if isUndefinedTable(err) {
			return nil
		}
		return queueErr(err, "count the messages circuit breakers hold in", queue)
	}
	for _, h := range got {
		if h.Breaker != nil {
			counts[*h.Breaker] += h.N
		}
	}
	return nil
}
