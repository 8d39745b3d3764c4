package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgbus/pgbus/internal/plural"
)

// DiscardDead moves dead messages of dlq to the DLQ's archive table, where
// they stay until PurgeDead or retention (RunRetention, after the queue's
// dead retention) removes them, and returns how many moved. With
// one id that is not there, it returns ErrNotFound. The move is one
// statement; cancelled while it runs, it finishes (finishStatement), so
// that what it moved is counted rather than reported as failed.
func (s *Store) DiscardDead(ctx context.Context, dlq string, ids []int64) (int, error) {
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return 0, err
	}
	if err := validateIDs("discard from", name, ids); err != nil {
		return 0, err
	}
	var done []int64
	err = finishStatement(ctx, func(ctx context.Context) (err error) {
		done, err = s.ArchiveMany(ctx, name, ids)
		return err
	})
	if err != nil {
		return 0, err
	}
	if len(done) == 0 && len(deadUniqueIDs(ids)) == 1 {
		return 0, deadGoneErr(name, ids[0])
	}
	return len(done), nil
}

// DiscardDeadMatching discards, as DiscardDead does, up to limit dead
// messages that f selects, oldest first, in batches, and returns how many
// moved. limit is 1 to MaxDeadBulk.
//
// progress, when given, is called after each batch with the messages done
// and the total expected, for a progress bar.
func (s *Store) DiscardDeadMatching(ctx context.Context, f DeadFilter, limit int, progress ...func(done, total int)) (int, error) {
	opts := DiscardOptions{}
	if len(progress) > 0 {
		opts.Progress = progress[0]
	}
	rep, err := s.DiscardDeadSelected(ctx, f, limit, opts)
	return rep.Discarded, err
}

// DiscardDeadSelected is DiscardDeadMatching with a report of the messages
// moved, a dry run (which returns the selected set's Token) and a guarded
// mode (opts.Expect: the expected set moves in one transaction, or nothing
// with ErrChanged).
func (s *Store) DiscardDeadSelected(ctx context.Context, f DeadFilter, limit int, opts DiscardOptions) (DiscardReport, error) {
	rep := DiscardReport{DryRun: opts.DryRun, Moved: []DeadID{}}
	if err := validateDeadBulk("discard", f, limit); err != nil {
		return rep, err
	}
	f, err := s.deadFrozen(ctx, f)
	if err != nil {
		return rep, err
	}
	rep.SelectedUntil = f.Until
	if !opts.DryRun && opts.Expect == "" {
		return rep, s.discardPaged(ctx, f, limit, opts.Progress, &rep)
	}
	refs, more, err := s.selectDead(ctx, f, limit)
	if err != nil {
		return rep, err
	}
	rep.More = more
	if opts.DryRun {
		rep.Token, err = s.deadSetToken(ctx, DeadSetDiscard, deadIDsOf(refs))
	} else {
		err = s.guarded(ctx, DeadSetDiscard, refs, opts.Expect, func(ctx context.Context, tx pgx.Tx) error { return s.archiveAll(ctx, tx, refs) })
	}
	if err != nil {
		return rep, err
	}
	for _, r := range refs {
		rep.add(r.dlq, r.id)
	}
	if opts.Progress != nil {
		opts.Progress(len(refs), len(refs))
	}
	return rep, nil
}

// archiveAll archives every message of refs in tx, and refuses when any
// is missing.
func (s *Store) archiveAll(ctx context.Context, tx pgx.Tx, refs []deadRef) error {
	for dlq, ids := range deadByDLQ(refs) {
		sql, err := s.archiveSQL(ctx, dlq)
		if err != nil {
			return err
		}
		c := claimColumnsOf(anyRead(ids))
		rows, err := tx.Query(ctx, sql, c.ids, c.reads, c.enqs)
		if err != nil {
			return s.archiveErr(ctx, err, "archive in", dlq)
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return s.archiveErr(ctx, err, "archive in", dlq)
		}
		if len(done) != len(ids) {
			return changed(fmt.Sprintf("%d of the selected dead messages of %s %s retried or discarded by another call meanwhile", len(ids)-len(done), dlq, plural.Of(len(ids)-len(done), "was", "were")), "nothing was moved")
		}
	}
	return nil
}

// discardPaged discards the messages f selects page by page, each page's
// messages of one DLQ in one statement. A cancelled ctx stops it between
// statements: one under way finishes, so that what it moved is counted.
func (s *Store) discardPaged(ctx context.Context, f DeadFilter, limit int, progress func(done, total int), rep *DiscardReport) error {
	total := limit
	if progress != nil {
		var err error
		if total, err = s.countDead(ctx, f, limit); err != nil {
			return err
		}
	}
	more, err := s.eachDeadPage(ctx, f, limit, func(refs []deadRef, done int) (int, error) {
		gone := 0
		by := deadByDLQ(refs)
		for _, dlq := range slices.Sorted(maps.Keys(by)) {
			var moved []int64
			err := finishStatement(ctx, func(ctx context.Context) (err error) {
				moved, err = s.ArchiveMany(ctx, dlq, by[dlq])
				return err
			})
			if err != nil {
				if OutcomeUnknown(err) {
					// Sent, and maybe committed: these may be discarded.
					for _, id := range by[dlq] {
						rep.Unsure = append(rep.Unsure, DeadID{DLQ: dlq, MsgID: id})
					}
				}
				return 0, err
			}
			rep.add(dlq, moved...)
			gone += len(by[dlq]) - len(moved)
		}
		rep.Gone += gone
		if progress != nil {
			progress(min(done-gone, total), total)
		}
		return gone, nil
	})
	rep.More = more
	return err
}

// PurgeDead deletes for good the archived messages of dlq (discarded, or
// originals of a retry with a corrected payload), or of every DLQ when dlq
// is "", archived more than olderThan ago (0: all), with their failure
// history, in batches: PurgeDeadBefore up to PurgeCutoff(olderThan).
func (s *Store) PurgeDead(ctx context.Context, dlq string, olderThan time.Duration, progress ...func(done, total int)) (int64, error) {
	cutoff, err := s.PurgeCutoff(ctx, olderThan)
	if err != nil {
		return 0, err
	}
	return s.PurgeDeadBefore(ctx, dlq, cutoff, progress...)
}

// PurgeCutoff returns the time olderThan before now by the database's
// clock, which archive times are written by: a purge of the messages
// archived more than olderThan ago deletes those archived at or before
// it. Working it out once lets a purge delete what a person was asked
// about rather than what has grown old since.
func (s *Store) PurgeCutoff(ctx context.Context, olderThan time.Duration) (time.Time, error) {
	if olderThan < 0 {
		return time.Time{}, invalidf("purge dead messages: age %s is negative; pass 0 to purge every archived dead message, or an age such as 720h", olderThan)
	}
	var cutoff time.Time
	if err := s.reads.QueryRow(ctx, `SELECT now() - $1 * interval '1 microsecond'`, olderThan.Microseconds()).Scan(&cutoff); err != nil {
		return time.Time{}, fmt.Errorf("store: purge dead messages: read the server clock: %w", err)
	}
	return cutoff, nil
}

// CountPurgeable counts the archived messages of dlq, or of every DLQ
// when dlq is "", that a purge up to cutoff deletes.
func (s *Store) CountPurgeable(ctx context.Context, dlq string, cutoff time.Time) (int64, error) {
	dlqs, err := s.purgeTargets(ctx, dlq)
	if err != nil {
		return 0, err
	}
	return s.purgeCount(ctx, dlqs, cutoff)
}

// PurgeDeadBefore deletes for good the archived messages (discarded, or
// originals of a retry with a corrected payload) of dlq, or of every DLQ
// when dlq is "", archived at or before cutoff, with their failure
// history, in batches. Live DLQ messages are not touched. It
// returns how many were deleted.
//
// progress, when given, is called after each batch with the messages
// deleted so far and the number there were to delete when the purge began
// (counted first, only then); messages a transaction that began before
// cutoff discards meanwhile can make done pass it.
func (s *Store) PurgeDeadBefore(ctx context.Context, dlq string, cutoff time.Time, progress ...func(done, total int)) (int64, error) {
	dlqs, err := s.purgeTargets(ctx, dlq)
	if err != nil {
		return 0, err
	}
	report := func(int64) {}
	if len(progress) > 0 && progress[0] != nil {
		expected, err := s.purgeCount(ctx, dlqs, cutoff)
		if err != nil {
			return 0, err
		}
		report = func(done int64) { progress[0](int(done), int(max(expected, done))) }
		report(0)
	}
	var total int64
	for _, d := range dlqs {
		before := total
		n, err := s.purgeArchive(ctx, d, cutoff, func(n int64) { report(before + n) })
		total += n
		if isUndefinedTable(err) && dlq == "" {
			continue // dropped meanwhile: nothing left to purge
		}
		if err != nil {
			return total, s.archiveErr(ctx, err, "purge the archive of", d)
		}
	}
	return total, nil
}

func (s *Store) purgeTargets(ctx context.Context, dlq string) ([]string, error) {
	if dlq == "" {
		return s.deadQueues(ctx)
	}
	name, err := s.resolveDLQ(ctx, dlq)
	return []string{name}, err
}

// purgeCount counts the archived messages of dlqs a purge up to cutoff
// deletes; a DLQ dropped meanwhile counts none.
func (s *Store) purgeCount(ctx context.Context, dlqs []string, cutoff time.Time) (int64, error) {
	var total int64
	for _, d := range dlqs {
		var n int64
		err := s.reads.QueryRow(ctx, `SELECT count(*) FROM `+archiveTable(d)+` WHERE archived_at <= $1`, cutoff).Scan(&n)
		if isUndefinedTable(err) {
			continue
		}
		if err != nil {
			return 0, s.archiveErr(ctx, err, "count the archive of", d)
		}
		total += n
	}
	return total, nil
}

// purgeArchive deletes dlq's archived messages up to cutoff in batches,
// calling done with the count so far after each.
//
// Each batch picks the oldest rows left by the archive's index on
// archived_at, from the time where the last batch ended, skipping rows
// another transaction holds: walking the index from its start again would
// pass over the entries of every row deleted so far, which stay until
// vacuum and which a transaction held open elsewhere makes costly to pass.
// Rows of that very time are picked again, so that ties across batches
// all go. Once a batch comes back short, one more starts from the oldest
// row again, and the purge ends only when such a batch comes back short:
// a row skipped while another transaction held it, or discarded by a
// transaction that committed behind the walk, still goes, as it did when
// every batch started there.
//
// A cancelled ctx stops it between batches: a batch under way finishes,
// so that what it deleted is counted.
func (s *Store) purgeArchive(ctx context.Context, dlq string, cutoff time.Time, done func(int64)) (int64, error) {
	sql := purgeArchiveSQL(dlq)
	var total int64
	start := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	from := start
	for {
		var n int64
		fromStart := from == start
		err := finishStatement(ctx, func(ctx context.Context) error {
			return s.db.QueryRow(ctx, sql, cutoff, purgeBatch, dlq, from).Scan(&n, &from)
		})
		if err != nil {
			return total, err
		}
		total += n
		done(total)
		if n < int64(purgeBatch) {
			if fromStart {
				return total, nil
			}
			from = start
		}
	}
}

// purgeArchiveSQL is one batch of purgeArchive: $1 the cutoff, $2 the
// batch size, $3 the DLQ, $4 the archived_at the last batch ended at. It
// returns how many rows went and where the next batch starts. It deletes
// the rows it picked, and their failure history, by arrays of their ids,
// which the planner looks up in the indexes: given "msg_id IN (...)" it
// could scan the whole archive, or the queue's whole history, at every
// batch. Not by ctid: a partitioned archive's partitions share ctids.
func purgeArchiveSQL(dlq string) string {
	a := archiveTable(dlq)
	return `WITH pick AS MATERIALIZED (
		SELECT msg_id, archived_at FROM ` + a + ` WHERE archived_at <= $1 AND archived_at >= $4
		ORDER BY archived_at LIMIT $2 FOR UPDATE SKIP LOCKED
	), d AS (
		DELETE FROM ` + a + ` WHERE msg_id = ANY(ARRAY(SELECT msg_id FROM pick))
		RETURNING msg_id
	), f AS (
		DELETE FROM pgbus.failures WHERE queue_name = $3::text AND msg_id = ANY(ARRAY(SELECT msg_id FROM d))
	)
	SELECT (SELECT count(*) FROM d), coalesce((SELECT max(archived_at) FROM pick), $4)`
}
