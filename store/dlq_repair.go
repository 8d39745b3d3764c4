package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DLQGap is a dead-letter queue that lacks some of what CreateDLQ gives
// one, which Migrate could not add: until someone who may adds it, its
// filters plan without statistics, its pages sort the whole DLQ, or its
// summary counts by reading it, as it lacks.
type DLQGap struct {
	DLQ     string   // the dead-letter queue
	Missing []string // what it lacks, in words
	Owner   string   // the role that owns its table, which may add them
	// Reason says why this Migrate left them missing, and Next what adds
	// them.
	Reason, Next string
}

// The parts of a DLQ that Migrate adds back, as DLQGap.Missing names them.
const (
	dlqPartIndex  = "the index of its newest-first pages"
	dlqPartStats  = "the planner statistics of its filters"
	dlqPartGroups = "the index and triggers of its group counts"
)

// dlqLack is one DLQ as sqlDLQLacks found it: something is missing.
type dlqLack struct {
	name, owner                string
	may                        bool // the role owns its table, or is a member of the owner
	noIndex, noStats, noGroups bool
}

func (l dlqLack) missing() []string {
	var out []string
	for _, p := range []struct {
		lacks bool
		what  string
	}{{l.noIndex, dlqPartIndex}, {l.noStats, dlqPartStats}, {l.noGroups, dlqPartGroups}} {
		if p.lacks {
			out = append(out, p.what)
		}
	}
	return out
}

// sqlDLQLacks lists the DLQs (or the one named by $1) that lack something
// createDLQIndex makes, by the names it gives them: one query over the
// catalogs, which takes no lock on any queue's table, so that a database
// of many queues pays one round trip at each start where nothing is
// missing. A DLQ whose name pgbus would not give, or whose table lacks the
// columns its filters and counts read (PGMQ before 1.5 had no headers), is
// left alone, as pgbus.dlq_groups_attach leaves it. An object of the name
// counts as there, whatever it is: IF NOT EXISTS would not replace it.
// They come in byte order of their names, whatever the database's
// collation, as Migrate reports them.
const sqlDLQLacks = `
	SELECT d.name, d.owner, d.may, d.no_index, d.no_stats, d.no_groups
	FROM (
		SELECT m.queue_name AS name, c.oid, pg_catalog.pg_get_userbyid(c.relowner)::text AS owner,
		       pg_catalog.pg_has_role(c.relowner, 'USAGE') AS may,
		       NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class i
		                   WHERE i.relnamespace = c.relnamespace AND i.relname = 'q_' || m.queue_name || '_enq_idx') AS no_index,
		       NOT EXISTS (SELECT 1 FROM pg_catalog.pg_statistic_ext x
		                   WHERE x.stxnamespace = c.relnamespace AND x.stxname = 'q_' || m.queue_name || '_filter_stats') AS no_stats,
		       NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class i
		                   WHERE i.relnamespace = c.relnamespace AND i.relname = 'q_' || m.queue_name || '_cause_idx')
		       OR (SELECT count(*) FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname IN
		           ('pgbus_dlq_groups_ins', 'pgbus_dlq_groups_del', 'pgbus_dlq_groups_upd', 'pgbus_dlq_groups_trunc')) < 4 AS no_groups
		FROM pgmq.meta m
		JOIN pg_catalog.pg_class c ON c.relnamespace = 'pgmq'::regnamespace AND c.relname = 'q_' || m.queue_name
		WHERE m.queue_name ~ '^[a-z][a-z0-9_]*_dlq$' AND length(m.queue_name) <= 47
		  AND ($1::text IS NULL OR m.queue_name = $1::text)
		OFFSET 0
	) d
	WHERE (d.no_index OR d.no_stats OR d.no_groups)
	  AND (SELECT count(*) FROM pg_catalog.pg_attribute a
	       WHERE a.attrelid = d.oid AND a.attnum > 0 AND NOT a.attisdropped
	         AND a.attname IN ('msg_id', 'enqueued_at', 'message', 'headers')) = 4
	ORDER BY d.name COLLATE "C"`

// dlqLacks runs sqlDLQLacks on q, for every DLQ when only is nil.
func dlqLacks(ctx context.Context, q querier, only *string) ([]dlqLack, error) {
	rows, err := q.Query(ctx, sqlDLQLacks, only)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dlqLack, error) {
		var l dlqLack
		err := r.Scan(&l.name, &l.owner, &l.may, &l.noIndex, &l.noStats, &l.noGroups)
		return l, err
	})
}

// repairDLQs gives every DLQ what createDLQIndex gives a new one, where it
// lacks some of it: a DLQ made after migration 0014 by an older pgbus, or
// by another PGMQ client (pgmq.create('x_dlq')), has no filter statistics,
// and one of another client no index or group counts either. It adds to
// st the DLQs it repaired and those it could not (DLQGap): a role that
// does not own the table, or a table busy past migrationLockWait, leaves
// the DLQ as it is and the caller warns, since a worker must start anyway.
// A DLQ dropped meanwhile needs nothing. Only the end of ctx, or a failed
// catalog query, is an error.
func (s *Store) repairDLQs(ctx context.Context, st MigrationStatus) (MigrationStatus, error) {
	lacks, err := dlqLacks(ctx, s.reads, nil)
	if err != nil {
		return st, fmt.Errorf("store: migrate: find the dead-letter queues that lack their index, filter statistics or group counts: %w", err)
	}
	for _, l := range lacks {
		if !l.may {
			st.DLQGaps = append(st.DLQGaps, gapOf(l, nil))
			continue
		}
		done, err := s.repairDLQ(ctx, l.name)
		switch {
		case ctx.Err() != nil:
			return st, fmt.Errorf("store: migrate: stopped while repairing dead-letter queue %q: %w", l.name, ctx.Err())
		case err != nil:
			st.DLQGaps = append(st.DLQGaps, gapOf(l, err))
		case done:
			st.DLQsRepaired = append(st.DLQsRepaired, l.name)
		}
	}
	return st, nil
}

// repairDLQ adds what dlq lacks, under the lock a create or drop of its
// queue takes, and analyzes its table when it had no filter statistics, so
// that they count at once. It reports false when nothing was missing once
// it held the lock, the DLQ was gone, or another transaction held the
// lock: a create of the queue, which makes what its DLQ lacks, its drop,
// or another process's repair, each of which leaves the DLQ whole or gone,
// so that processes starting together do not queue behind one another.
func (s *Store) repairDLQ(ctx context.Context, dlq string) (done bool, err error) {
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if err := setLockTimeout(ctx, tx, migrationLockWait); err != nil {
			return err
		}
		var locked bool
		err := tx.QueryRow(ctx, `SELECT bool_and(pg_try_advisory_xact_lock(hashtext('pgbus.queue:' || n))) FROM unnest($1::text[]) n`,
			queueLocks(strings.TrimSuffix(dlq, DLQSuffix))).Scan(&locked)
		if err != nil || !locked {
			return err
		}
		// Another process may have repaired it, or dropped it, meanwhile.
		now, err := dlqLacks(ctx, tx, &dlq)
		if err != nil || len(now) == 0 {
			return err
		}
		if err := createDLQIndex(ctx, tx, dlq); err != nil {
			return err
		}
		if now[0].noStats {
			if _, err := tx.Exec(ctx, `ANALYZE `+queueTable(dlq)); err != nil {
				return fmt.Errorf("store: analyze dead-letter queue %q: %w", dlq, err)
			}
		}
		done = true
		return nil
	})
	if isUndefinedTable(err) {
		return false, nil // dropped by another PGMQ client meanwhile
	}
	return done, err
}

// gapOf is the gap of l, which this Migrate left: the role does not own
// its table (err nil), or the repair failed with err.
func gapOf(l dlqLack, err error) DLQGap {
	g := DLQGap{DLQ: l.name, Missing: l.missing(), Owner: l.owner}
	asOwner := fmt.Sprintf("migrate as role %s, which owns pgmq.q_%s (a worker started as that role repairs it too)", l.owner, l.name)
	switch {
	case err == nil:
		g.Reason, g.Next = "this role does not own its table", asOwner
	case isLockTimeout(err):
		g.Reason = fmt.Sprintf("its table stayed locked by another transaction for %s", migrationLockWait)
		g.Next = "migrate again once that transaction has ended; the next start of a worker tries again too"
	case IsPermissionDenied(err):
		g.Reason, g.Next = "this role may not add them: "+err.Error(), asOwner
	default:
		g.Reason, g.Next = err.Error(), asOwner
	}
	return g
}
