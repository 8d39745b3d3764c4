package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxDeadGroups bounds the groups one summary returns: the largest ones.
const MaxDeadGroups = 500

// DeadSummary is the result of SummarizeDeadReport.
type DeadSummary struct {
	// Groups are the largest MaxDeadGroups groups, largest first.
	Groups []DeadGroup `json:"groups"`
	// TotalGroups counts every group the filter selects, those left out
	// included.
	TotalGroups int `json:"total_groups"`
	// TotalMessages counts the dead messages of every group the filter
	// selects, those left out included.
	TotalMessages int64 `json:"total_messages"`
	// AfterGroups counts the groups ranked after the cursor
	// (SummaryOptions.Cursor), those of Groups included, and AfterMessages
	// their dead messages: TotalGroups and TotalMessages without one.
	AfterGroups   int   `json:"after_groups"`
	AfterMessages int64 `json:"after_messages"`
	// Truncated is set when groups holds fewer than AfterGroups: more
	// groups are ranked after the last of Groups.
	Truncated bool `json:"truncated,omitempty"`
}

// SummarizeDead groups the dead messages f selects by (DLQ, source queue,
// kind, error class), largest group first (then the newest, then by DLQ
// and group key),
// each with its reasons, first and last dead-letter time (the DLQ row's
// enqueued_at) and up to 5 sample ids, newest first. Only the MaxDeadGroups
// largest groups are returned; SummarizeDeadReport also tells how many
// there are.
func (s *Store) SummarizeDead(ctx context.Context, f DeadFilter) ([]DeadGroup, error) {
	sum, err := s.SummarizeDeadReport(ctx, f)
	if err != nil {
		return nil, err
	}
	return sum.Groups, nil
}

// SummarizeDeadReport is SummarizeDead with the number of groups.
//
// Without a filter on time, text, group or payload size (kind, error class and reason
// are counted), it counts from pgbus.dlq_group_counts, which triggers on
// every DLQ table keep exact (schema/0007_dlq_groups.sql,
// schema/0013_dlq_group_deltas.sql), and reads each group's first and last
// time and newest ids through the DLQ's index on its group: the cost
// follows the number of groups, not of messages. With a filter on time,
// text or group, it reads the messages each group of such a DLQ holds
// through that index (summaryFromIndex). DLQs without those triggers (made
// by another PGMQ client and not yet seen by CreateQueue or a migration,
// or whose triggers are off) are summarized by reading every message.
// All give the same result for the same data; all of it is read in one
// snapshot.
func (s *Store) SummarizeDeadReport(ctx context.Context, f DeadFilter) (DeadSummary, error) {
	return s.SummarizeDeadWith(ctx, f, SummaryOptions{})
}

// SummaryOptions tune SummarizeDeadWith.
type SummaryOptions struct {
	// ByField is a path of keys into the payload (["file", "type"]); each
	// group listed is broken down by the value found there.
	ByField []string
	// Cursor, from DeadGroupCursor with the same filter, asks for the
	// groups ranked after the group it names, as they rank now: the
	// next page of a summary read in pages. Groups change between pages
	// (deaths, retries, discards), so a group that grew past the cursor
	// since is not listed again, and one that shrank past it is listed
	// again; over groups that do not change, the pages list each group
	// once, and end. "" for the first page.
	Cursor string
}

// SummarizeDeadWith is SummarizeDeadReport with options.
func (s *Store) SummarizeDeadWith(ctx context.Context, f DeadFilter, o SummaryOptions) (DeadSummary, error) {
	out := DeadSummary{Groups: []DeadGroup{}}
	if err := f.validate(); err != nil {
		return out, err
	}
	if err := validateFieldPath(o.ByField); err != nil {
		return out, err
	}
	c, err := s.decodeSignedCursor(ctx, o.Cursor, f.fingerprint(), inSummary)
	if err != nil {
		return out, err
	}
	var after *DeadGroup
	if c != nil {
		after = &DeadGroup{Count: c.I, LastDeadAt: c.T, DLQ: c.Q, Group: c.G}
	}
	err = s.runDead(ctx, f, func(q *deadQuery) error {
		base := &deadQuery{dlqs: slices.Clone(q.dlqs), conds: q.conds, args: slices.Clone(q.args), text: q.text, group: q.group}
		opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
		return pgx.BeginTxFunc(ctx, s.db, opts, func(tx pgx.Tx) error {
			// As a list does: the DLQs the counts say are empty, in
			// this snapshot, are passed over, so that a summary over
			// hundreds of DLQs, most of them empty, plans and locks
			// only those that may hold messages.
			var err error
			if q.dlqs, err = deadHolding(ctx, tx, q.dlqs); err != nil || len(q.dlqs) == 0 {
				return err
			}
			groups, total, err := summarizeDead(ctx, tx, q, f, after)
			if err != nil {
				return err
			}
			slices.SortFunc(groups, compareDeadGroups)
			out.Groups = append([]DeadGroup{}, groups[:min(len(groups), MaxDeadGroups)]...)
			out.TotalGroups, out.TotalMessages, out.Truncated = total.groups, total.messages, total.afterGroups > len(out.Groups)
			out.AfterGroups, out.AfterMessages = total.afterGroups, total.afterMessages
			if len(o.ByField) == 0 || len(out.Groups) == 0 {
				return nil
			}
			return breakDownDead(ctx, tx, base, out.Groups, o.ByField)
		})
	})
	if err != nil {
		return DeadSummary{Groups: []DeadGroup{}}, wrapDead("summarize dead messages", err)
	}
	return out, nil
}

// deadTotals counts the groups a filter selects and their messages, and
// those ranked after a summary's cursor (all of them without one).
type deadTotals struct {
	groups        int
	messages      int64
	afterGroups   int
	afterMessages int64
}

func (t deadTotals) add(u deadTotals) deadTotals {
	return deadTotals{t.groups + u.groups, t.messages + u.messages, t.afterGroups + u.afterGroups, t.afterMessages + u.afterMessages}
}

// summarizeDead returns the groups ranked after the group after (nil: from
// the first) that may be among the largest MaxDeadGroups of them,
// unsorted, and the number of groups and of their messages.
func summarizeDead(ctx context.Context, tx pgx.Tx, q *deadQuery, f DeadFilter, after *DeadGroup) ([]DeadGroup, deadTotals, error) {
	scan := q.dlqs
	var groups []DeadGroup
	var total deadTotals
	switch {
	case probeOf(ctx).only():
	case f.Since.IsZero() && f.Until.IsZero() && f.Text == "" && f.Group == "" && f.MinPayloadBytes == 0:
		tracked, err := deadTracked(ctx, tx, q.dlqs)
		if err != nil {
			return nil, deadTotals{}, err
		}
		scan = slices.DeleteFunc(slices.Clone(q.dlqs), func(d string) bool { return tracked[d] })
		if len(tracked) > 0 {
			if groups, total, err = summaryFromGroups(ctx, tx, tracked, f, after); err != nil {
				return nil, deadTotals{}, err
			}
		}
	default:
		indexed, err := deadIndexed(ctx, tx, q.dlqs)
		if err != nil {
			return nil, deadTotals{}, err
		}
		if f.Group == "" && len(indexed) > 0 && !probeOf(ctx).indexed() {
			if indexed, err = indexPays(ctx, tx, q, indexed); err != nil {
				return nil, deadTotals{}, err
			}
		}
		scan = slices.DeleteFunc(slices.Clone(q.dlqs), func(d string) bool { return indexed[d] })
		if len(indexed) > 0 {
			iq := &deadQuery{conds: q.conds, args: slices.Clone(q.args), text: q.text, group: q.group}
			for _, d := range q.dlqs {
				if indexed[d] {
					iq.dlqs = append(iq.dlqs, d)
				}
			}
			if groups, total, err = summaryFromIndex(ctx, tx, iq, after); err != nil {
				return nil, deadTotals{}, err
			}
		}
	}
	if len(scan) > 0 {
		probeOf(ctx).saw(scan)
		q.dlqs = scan
		more, n, err := summaryFromScan(ctx, tx, q, after)
		if err != nil {
			return nil, deadTotals{}, err
		}
		groups, total = append(groups, more...), total.add(n)
	}
	return groups, total, nil
}

// compareDeadGroups orders groups largest first, then newest first, then
// by DLQ and group key in byte order, as the SQL of each way does
// (sqlGroupOrder): a total order, since a group is one key in one DLQ,
// which a summary's cursor carries (DeadGroupCursor).
func compareDeadGroups(a, b DeadGroup) int {
	return cmp.Or(
		cmp.Compare(b.Count, a.Count),
		b.LastDeadAt.Compare(a.LastDeadAt),
		strings.Compare(a.DLQ, b.DLQ),
		strings.Compare(a.Group, b.Group),
	)
}

// sqlGroupOrder is compareDeadGroups in SQL, over the columns n, last_at,
// dlq and group_key (the key as text).
const sqlGroupOrder = `n DESC, last_at DESC, dlq COLLATE "C", group_key COLLATE "C"`

// groupsAfter is the SQL condition of the groups ranked after the group
// after (compareDeadGroups), over the columns of sqlGroupOrder; TRUE
// without one.
func (q *deadQuery) groupsAfter(after *DeadGroup) string {
	if after == nil {
		return "TRUE"
	}
	n, at, dlq, key := q.arg(after.Count), q.arg(after.LastDeadAt), q.arg(after.DLQ), q.arg(after.Group)
	return `(n < ` + n + `::bigint OR n = ` + n + `::bigint AND (last_at < ` + at + `::timestamptz OR last_at = ` + at + `::timestamptz AND (
		dlq COLLATE "C" > ` + dlq + `::text OR dlq = ` + dlq + `::text AND group_key COLLATE "C" > ` + key + `::text)))`
}

// deadTracked returns those of dlqs whose groups pgbus.dlq_group_counts
// counts.
func deadTracked(ctx context.Context, tx pgx.Tx, dlqs []string) (map[string]bool, error) {
	return nameSet(tx.Query(ctx, `
		SELECT n FROM unnest($1::text[]) AS n
		WHERE pgbus.dlq_groups_tracked(to_regclass(format('%I.%I', 'pgmq', 'q_' || n)))`, dlqs))
}

// deadIndexed returns those of dlqs whose groups pgbus.dlq_group_counts
// counts and whose table has a valid index on the group key
// (q_<dlq>_cause_idx, made by pgbus.dlq_groups_attach with the triggers
// that count): the DLQs whose groups summaryFromIndex can read. A DLQ
// whose triggers are off, or whose index a failed build left invalid, is
// read message by message.
func deadIndexed(ctx context.Context, tx pgx.Tx, dlqs []string) (map[string]bool, error) {
	return nameSet(tx.Query(ctx, `
		SELECT n FROM unnest($1::text[]) AS n
		WHERE pgbus.dlq_groups_tracked(to_regclass(format('%I.%I', 'pgmq', 'q_' || n)))
		  AND EXISTS (SELECT FROM pg_catalog.pg_index i
		              WHERE i.indexrelid = to_regclass(format('%I.%I', 'pgmq', 'q_' || n || '_cause_idx'))
		                AND i.indisvalid AND i.indisready)`, dlqs))
}

// nameSet reads the names a statement returns, one a row, as a set.
func nameSet(rows pgx.Rows, err error) (map[string]bool, error) {
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// indexPaysRatio is how many messages per group a DLQ's selection must
// hold for summaryFromIndex, which probes every group of the DLQ, to cost
// less than summaryFromScan, which reads the selected messages: a probe
// costs about as much as normalizing a few messages' errors.
const indexPaysRatio = 8

// indexPays keeps, of the indexed DLQs, those whose groups cost less to
// probe than the messages q selects (its text aside, which both ways
// apply to the same messages) cost to read: a small window of time on a
// DLQ of many groups, "what died in the last hour", reads the window's
// few messages through the DLQ's index on enqueued_at instead of probing
// every group. A DLQ's groups are counted by pgbus.dlq_group_counts, and
// its selection up to indexPaysRatio messages a group, so that deciding
// costs no more than the cheaper way.
func indexPays(ctx context.Context, tx pgx.Tx, q *deadQuery, indexed map[string]bool) (map[string]bool, error) {
	names := slices.Sorted(maps.Keys(indexed))
	rows, err := tx.Query(ctx, `SELECT dlq, count(DISTINCT group_key) FROM pgbus.dlq_group_counts WHERE dlq = ANY($1) GROUP BY dlq`, names)
	if err != nil {
		return nil, err
	}
	groups := map[string]int64{}
	var dlq string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&dlq, &n}, func() error { groups[dlq] = n; return nil }); err != nil {
		return nil, err
	}
	where := "TRUE"
	for _, c := range q.conds {
		if c == q.text {
			// Typed, its parameter is, but the planner folds it away.
			c = "(" + c + " OR TRUE)"
		}
		where += " AND " + c
	}
	out := map[string]bool{}
	err = inChunks(ctx, tx, names, func(tx pgx.Tx, chunk []string) error {
		cq := &deadQuery{args: slices.Clone(q.args)}
		parts := make([]string, len(chunk))
		for i, d := range chunk {
			parts[i] = `SELECT ` + cq.arg(d) + `::text, (SELECT count(*) FROM (SELECT FROM ` + queueTable(d) + ` WHERE ` + where +
				` LIMIT ` + cq.arg(groups[d]*indexPaysRatio) + `) w) >= ` + cq.arg(groups[d]*indexPaysRatio)
		}
		rows, err := tx.Query(ctx, strings.Join(parts, "\nUNION ALL\n"), cq.args...)
		if err != nil {
			return err
		}
		var pays bool
		_, err = pgx.ForEachRow(rows, []any{&dlq, &pays}, func() error {
			if pays {
				out[dlq] = true
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sqlCauseKey is a DLQ row's group key, the expression of the DLQ's
// index q_<dlq>_cause_idx.
const sqlCauseKey = `pgbus.dlq_cause_key(headers, message)`

// summaryFromIndex summarizes the DLQs of q, each with its index on the
// group key, as summaryFromScan does, reading the index rather than
// normalizing every message's error again: it walks the index's distinct
// keys (one probe each), then, for each key, reads the messages q selects
// through the index for their count, first and last times, reasons and
// newest 5 ids, and makes the group's names from the newest. The
// groups and the keys come from the messages themselves, not from
// pgbus.dlq_group_counts, so that messages written past its triggers
// show as they would in the scan. Only the messages of a group are read,
// through the index, which on 300,000 dead messages took a fraction of a
// second where the scan took most of a database call's time. The text's
// condition applies to what the index found (OFFSET 0 keeps the planner
// from taking it into each group's read): planned per group, an index on
// the error text, which a DBA may add, was read once per group, in all
// longer than the scan.
func summaryFromIndex(ctx context.Context, tx pgx.Tx, q *deadQuery, after *DeadGroup) ([]DeadGroup, deadTotals, error) {
	where, text := "", "true"
	for _, c := range q.conds {
		if c == q.text {
			text = c
		} else {
			where += " AND " + c
		}
	}
	return groupsInChunks(ctx, tx, q, after, func(cq *deadQuery) string {
		return `SELECT * FROM (` + indexedGroupsSQL(cq, where, text) + `) u`
	})
}

// indexedGroupsSQL is the statement of summaryFromIndex's groups of q's
// DLQs: where holds q's conditions but its text's, and text that one
// (true for none).
func indexedGroupsSQL(q *deadQuery, where, text string) string {
	parts := make([]string, len(q.dlqs))
	for i, dlq := range q.dlqs {
		t := queueTable(dlq)
		keys := `WITH RECURSIVE ks AS (
				(SELECT ` + sqlCauseKey + ` AS k FROM ` + t + ` ORDER BY 1 LIMIT 1)
				UNION ALL
				SELECT (SELECT ` + sqlCauseKey + ` FROM ` + t + ` WHERE ` + sqlCauseKey + ` > ks.k ORDER BY 1 LIMIT 1)
				FROM ks WHERE ks.k IS NOT NULL)`
		if q.group != "" { // the one key the filter names
			keys = `WITH ks AS (SELECT ` + q.group + `::uuid AS k)`
		}
		parts[i] = `(` + keys + `
			SELECT ` + q.arg(dlq) + `::text AS dlq, nm.source_queue, nm.kind, nm.error_class, nm.error_norm,
			       c.n, c.first_at, c.last_at, c.reasons, c.ids, nm.msg, nm.trips, ks.k::text AS group_key
			FROM ks
			CROSS JOIN LATERAL (
				SELECT count(*) AS n, min(enqueued_at) AS first_at, max(enqueued_at) AS last_at,
				       coalesce(array_agg(DISTINCT ` + sqlDeadBlock + `->>'reason' COLLATE "C" ORDER BY ` + sqlDeadBlock + `->>'reason' COLLATE "C")
				                FILTER (WHERE ` + sqlDeadBlock + `->>'reason' IS NOT NULL), '{}') AS reasons,
				       (array_agg(msg_id ORDER BY enqueued_at DESC, msg_id DESC))[1:5] AS ids
				FROM (SELECT msg_id, enqueued_at, headers FROM ` + t + ` WHERE ` + sqlCauseKey + ` = ks.k` + where + ` OFFSET 0) m
				WHERE ` + text + `) c
			CROSS JOIN LATERAL (
				SELECT ` + sqlDeadGroupExprs + `, ` + sqlDeadMessage + ` AS msg, ` + sqlDeadTrips + ` AS trips
				FROM ` + t + ` WHERE msg_id = c.ids[1]) nm
			WHERE ks.k IS NOT NULL AND c.n > 0)`
	}
	return strings.Join(parts, "\nUNION ALL\n")
}

// pageOfGroups selects, of the groups the statement groups returns (the
// columns collectGroups reads, but for the counts), the largest
// MaxDeadGroups ranked after the group after, and one row more, marked,
// with the counts of all of them and of those ranked after, which it
// gives even when no group ranks after it.
func pageOfGroups(q *deadQuery, groups string, after *DeadGroup) string {
	return `WITH a AS MATERIALIZED (SELECT g.*, ` + q.groupsAfter(after) + ` AS after FROM (` + groups + `) g)
		(SELECT false, ` + sqlDeadGroupCols + `, n, first_at, last_at, reasons, ids, msg, trips, group_key, 0::bigint, 0::bigint, 0::bigint, 0::bigint
		 FROM a WHERE after
		 ORDER BY ` + sqlGroupOrder + `
		 LIMIT ` + q.arg(MaxDeadGroups) + `)
		UNION ALL
		SELECT true, '', '', '', '', '', 0::bigint, now(), now(), '{}'::text[], '{}'::bigint[], '', 0, '',
		       count(*), coalesce(sum(n), 0)::bigint, count(*) FILTER (WHERE after), coalesce(sum(n) FILTER (WHERE after), 0)::bigint
		FROM a`
}

// trackedGroup is a group as pgbus.dlq_group_counts counts it.
type trackedGroup struct {
	key [16]byte
	DeadGroup
}

// summaryFromGroups summarizes tracked DLQs: it adds up the counts of
// pgbus.dlq_group_counts (one row per group and reason), keeps the groups that
// can be among the largest MaxDeadGroups (those as large as the
// MaxDeadGroups-th, ties included), picks those the page lists by their
// last times (pickDeadGroups), and reads the first times and sample ids of
// those alone from the DLQs' group indexes, two probes per group. After
// a group (after), it keeps those smaller than it that can be among the
// largest MaxDeadGroups of them, and every group as large as it, whose
// place before or after it only their last times, probed, tell.
func summaryFromGroups(ctx context.Context, tx pgx.Tx, tracked map[string]bool, f DeadFilter, after *DeadGroup) ([]DeadGroup, deadTotals, error) {
	dlqs := slices.Collect(maps.Keys(tracked))
	var below *int64 // the size of the group after, when there is one
	if after != nil {
		below = &after.Count
	}
	rows, err := tx.Query(ctx, `
		WITH g AS (
			SELECT dlq, group_key, min(source_queue) AS source_queue, min(kind) AS kind, min(error_class) AS error_class,
			       min(error_norm) AS error_norm,
			       sum(count)::bigint AS n,
			       coalesce(array_agg(DISTINCT reason COLLATE "C" ORDER BY reason COLLATE "C") FILTER (WHERE reason IS NOT NULL), '{}') AS reasons
			FROM pgbus.dlq_group_counts
			WHERE dlq = ANY($1) AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR error_class = $3)
			  AND ($5::text IS NULL OR CASE WHEN $5 = '`+ReasonNotRecorded+`' THEN coalesce(reason, '') = '' ELSE reason = $5 END)
			GROUP BY dlq, group_key
			HAVING sum(count) > 0
		), w AS (
			SELECT g.*, count(*) OVER () AS total, sum(n) OVER ()::bigint AS messages,
			       count(*) FILTER (WHERE $6::bigint IS NULL OR n < $6) OVER () AS smaller,
			       coalesce(sum(n) FILTER (WHERE $6::bigint IS NULL OR n < $6) OVER (), 0)::bigint AS smaller_messages
			FROM g
		)
		SELECT group_key, dlq, source_queue, kind, error_class, error_norm, n, reasons, total, messages, smaller, smaller_messages FROM w
		WHERE ($6::bigint IS NULL OR n <= $6)
		  AND n >= coalesce((SELECT n FROM g WHERE $6::bigint IS NULL OR n < $6 ORDER BY n DESC OFFSET $4 LIMIT 1), 0)`,
		dlqs, orNull(f.Kind), orNull(fitOf(tx.Conn()).apply(f.ErrorClass)), MaxDeadGroups-1, orNull(f.Reason), below)
	if err != nil {
		return nil, deadTotals{}, err
	}
	var total deadTotals
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (trackedGroup, error) {
		var g trackedGroup
		err := r.Scan(&g.key, &g.DLQ, &g.SourceQueue, &g.Kind, &g.ErrorClass, &g.ErrorPattern, &g.Count, &g.Reasons,
			&total.groups, &total.messages, &total.afterGroups, &total.afterMessages)
		return g, err
	})
	if err != nil || len(found) == 0 {
		return nil, total, err
	}
	picked, tied, err := pickDeadGroups(ctx, tx, found, f.Reason, after)
	if err != nil {
		return nil, deadTotals{}, err
	}
	if after != nil {
		// As large as the group after, and ranked after it: counted as
		// after it, as those smaller than it already are.
		total.afterGroups += tied
		total.afterMessages += int64(tied) * after.Count
	}
	byDLQ := map[string][]*trackedGroup{}
	for _, g := range picked {
		byDLQ[g.DLQ] = append(byDLQ[g.DLQ], g)
	}
	if err := probeDeadGroups(ctx, tx, byDLQ, f.Reason); err != nil {
		return nil, deadTotals{}, err
	}
	out := make([]DeadGroup, 0, len(picked))
	for _, g := range picked {
		if len(g.SampleMsgIDs) == 0 { // no message: cannot be, in the snapshot its last time was read in
			continue
		}
		out = append(out, g.DeadGroup)
	}
	return out, total, nil
}

// pickDeadGroups returns, of found, the groups a page lists, each with its
// key as text and its last time: the first MaxDeadGroups in the order of
// compareDeadGroups of those that rank after the group after (every one
// without it) and hold a message (the counts of a DLQ written with its
// triggers off can be stale), in that order; and how many of those as
// large as after rank after it. To order them it reads only their last
// times, one index probe per group (probeLastTimes), and only of the sizes
// the page reaches: from the largest down, whole sizes at a time, until
// the groups read hold a page. Only the groups picked are then probed in
// full, rather than every group tied with the last one listed: a long
// tail of groups of one message each, all tied, had every one of its
// groups probed in full on every page.
func pickDeadGroups(ctx context.Context, tx pgx.Tx, found []trackedGroup, reason string, after *DeadGroup) ([]*trackedGroup, int, error) {
	bySize := make([]*trackedGroup, len(found))
	for i := range found {
		bySize[i] = &found[i]
		bySize[i].Group = groupKeyText(found[i].key)
	}
	slices.SortFunc(bySize, func(a, b *trackedGroup) int { return cmp.Compare(b.Count, a.Count) })
	var picked []*trackedGroup
	tied, need := 0, MaxDeadGroups
	for i := 0; i < len(bySize) && need > 0; {
		// The sizes of at least need groups, whole: the first holds every
		// group as large as after, which the totals count.
		j := min(i+need, len(bySize))
		for j < len(bySize) && bySize[j].Count == bySize[j-1].Count {
			j++
		}
		top, n, t, err := probeLastTimes(ctx, tx, bySize[i:j], reason, after, need)
		if err != nil {
			return nil, 0, err
		}
		picked, tied, need, i = append(picked, top...), tied+t, need-n, j
	}
	slices.SortFunc(picked, func(a, b *trackedGroup) int { return compareDeadGroups(a.DeadGroup, b.DeadGroup) })
	return picked[:min(len(picked), MaxDeadGroups)], tied, nil
}

// probeLastTimes reads the last time of each of groups that holds a
// message (with a reason, a message of that reason), one statement per
// DLQ, a chunk of DLQs (inChunks) a round trip. Of those that rank after the group after
// (all without one), it returns each DLQ's first limit in the order of
// compareDeadGroups, with their last times set, how many rank after it
// in all, and how many of those are as large as after.
func probeLastTimes(ctx context.Context, tx pgx.Tx, groups []*trackedGroup, reason string, after *DeadGroup, limit int) ([]*trackedGroup, int, int, error) {
	byDLQ := map[string][]*trackedGroup{}
	for _, g := range groups {
		byDLQ[g.DLQ] = append(byDLQ[g.DLQ], g)
	}
	var top []*trackedGroup
	var ranked, tied int
	err := inChunks(ctx, tx, slices.Sorted(maps.Keys(byDLQ)), func(tx pgx.Tx, chunk []string) error {
		batch := &pgx.Batch{}
		for _, dlq := range chunk {
			gs := byDLQ[dlq]
			probeLastTimesOf(batch, dlq, gs, reason, after, limit, func(found []*trackedGroup, n, t int) {
				top, ranked, tied = append(top, found...), ranked+n, tied+t
			})
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, 0, 0, err
	}
	return top, ranked, tied, nil
}

// probeLastTimesOf queues in batch probeLastTimes' statement of the
// groups gs of dlq, which gives what it found to found: the groups in
// order with their last times set, how many rank after the group after,
// and how many of those are as large as it.
func probeLastTimesOf(batch *pgx.Batch, dlq string, gs []*trackedGroup, reason string, after *DeadGroup, limit int, found func([]*trackedGroup, int, int)) {
	keys, sizes := make([]string, len(gs)), make([]int64, len(gs))
	for i, g := range gs {
		keys[i], sizes[i] = g.Group, g.Count
	}
	var afterN *int64
	var afterAt *time.Time
	var afterKey *string
	var dlqAfter, dlqSame bool
	if after != nil {
		afterN, afterAt, afterKey = &after.Count, &after.LastDeadAt, &after.Group
		dlqAfter, dlqSame = dlq > after.DLQ, dlq == after.DLQ
	}
	q := &deadQuery{args: []any{keys, sizes, limit, afterN, afterAt, dlqAfter, dlqSame, afterKey}}
	of := probeReason(q, reason)
	// The probe orders by the cause key first, as probeDeadGroups'
	// do, so that only the cause index gives its order.
	batch.Queue(`
			WITH c AS (
				SELECT k.i, k.n, k.key, l.at
				FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS k(key, n, i)
				CROSS JOIN LATERAL (
					SELECT d.enqueued_at AS at FROM `+queueTable(dlq)+` d
					WHERE pgbus.dlq_cause_key(d.headers, d.message) = k.key`+of+`
					ORDER BY pgbus.dlq_cause_key(d.headers, d.message) DESC, d.enqueued_at DESC, d.msg_id DESC LIMIT 1) l
				WHERE $4::bigint IS NULL OR k.n < $4::bigint OR l.at < $5::timestamptz
				   OR l.at = $5::timestamptz AND ($6::boolean OR $7::boolean AND k.key::text COLLATE "C" > $8::text)
			)
			SELECT i, at, count(*) OVER (), count(*) FILTER (WHERE n = $4::bigint) OVER ()
			FROM c ORDER BY n DESC, at DESC, key::text COLLATE "C" LIMIT $3::int`, q.args...).
		Query(func(rows pgx.Rows) error {
			var i, n, t int
			var at time.Time
			var top []*trackedGroup
			for rows.Next() {
				if err := rows.Scan(&i, &at, &n, &t); err != nil {
					return err
				}
				if i < 1 || i > len(gs) {
					continue
				}
				gs[i-1].LastDeadAt = at
				top = append(top, gs[i-1])
			}
			found(top, n, t)
			return rows.Err()
		})
}

// probeReason is the condition a probe of a DLQ row d adds for a
// summary's reason ("" without one), its parameter added to q.
func probeReason(q *deadQuery, reason string) string {
	switch reason {
	case "":
		return ""
	case ReasonNotRecorded:
		return ` AND coalesce(` + sqlDeadBlock + `->>'reason', '') = ''`
	}
	return ` AND ` + sqlDeadBlock + `->>'reason' = ` + q.arg(reason)
}

// probeDeadGroups fills in first and last times and sample ids, one
// statement per DLQ, a chunk of DLQs (inChunks) a round trip; with a reason, of the group's
// messages of that reason only. The probes order by the cause key first,
// the one key they select, so that only the cause index gives their
// order: ordered by time alone, the planner could walk the time index
// filtering by key, through every message of the groups dead-lettered
// after (or before) the one probed, seconds when failures came in bursts.
func probeDeadGroups(ctx context.Context, tx pgx.Tx, byDLQ map[string][]*trackedGroup, reason string) error {
	return inChunks(ctx, tx, slices.Sorted(maps.Keys(byDLQ)), func(tx pgx.Tx, chunk []string) error {
		batch := &pgx.Batch{}
		for _, dlq := range chunk {
			probeDeadGroupsOf(ctx, batch, dlq, byDLQ[dlq], reason)
		}
		return tx.SendBatch(ctx, batch).Close()
	})
}

// probeDeadGroupsOf queues in batch probeDeadGroups' statement of the
// groups of dlq, which fills them in.
func probeDeadGroupsOf(ctx context.Context, batch *pgx.Batch, dlq string, groups []*trackedGroup, reason string) {
	probeOf(ctx).fullyProbed(len(groups))
	// As text: a mode that does not ask the server for the types of
	// parameters (default_query_exec_mode=exec or simple_protocol)
	// cannot encode [16]byte.
	keys := make([]string, len(groups))
	for i, g := range groups {
		keys[i] = groupKeyText(g.key)
	}
	q := &deadQuery{args: []any{keys}}
	of := probeReason(q, reason)
	args := q.args
	t := queueTable(dlq)
	batch.Queue(`
			SELECT k.i, f.at, s.ats, s.ids, s.msg, s.trips
			FROM unnest($1::uuid[]) WITH ORDINALITY AS k(key, i)
			CROSS JOIN LATERAL (
				SELECT d.enqueued_at AS at FROM `+t+` d
				WHERE pgbus.dlq_cause_key(d.headers, d.message) = k.key`+of+`
				ORDER BY pgbus.dlq_cause_key(d.headers, d.message), d.enqueued_at, d.msg_id LIMIT 1) f
			CROSS JOIN LATERAL (
				SELECT array_agg(n.enqueued_at ORDER BY n.enqueued_at DESC, n.msg_id DESC) AS ats,
				       array_agg(n.msg_id ORDER BY n.enqueued_at DESC, n.msg_id DESC) AS ids,
				       (array_agg(n.msg ORDER BY n.enqueued_at DESC, n.msg_id DESC))[1] AS msg,
				       (array_agg(n.trips ORDER BY n.enqueued_at DESC, n.msg_id DESC))[1] AS trips
				FROM (SELECT d.enqueued_at, d.msg_id, `+sqlDeadMessage+` AS msg, `+sqlDeadTrips+` AS trips FROM `+t+` d
				      WHERE pgbus.dlq_cause_key(d.headers, d.message) = k.key`+of+`
				      ORDER BY pgbus.dlq_cause_key(d.headers, d.message) DESC, d.enqueued_at DESC, d.msg_id DESC LIMIT 5) n) s`, args...).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var i int
				var ats []time.Time
				var g DeadGroup
				if err := rows.Scan(&i, &g.FirstDeadAt, &ats, &g.SampleMsgIDs, &g.ErrorMessage, &g.RetriesFromDLQ); err != nil {
					return err
				}
				if i < 1 || i > len(groups) || len(ats) == 0 {
					continue
				}
				dst := groups[i-1]
				dst.FirstDeadAt, dst.LastDeadAt, dst.SampleMsgIDs, dst.ErrorMessage = g.FirstDeadAt, ats[0], g.SampleMsgIDs, g.ErrorMessage
				dst.RetriesFromDLQ = g.RetriesFromDLQ
			}
			return rows.Err()
		})
}

// SQL of the columns groups are made of, the same on every path (the
// normalized message is the one pgbus.dlq_group_counts holds, see
// schema/0010_dlq_error_groups.sql).
const (
	sqlDeadMessage = `coalesce(` + sqlDeadBlock + `->>'error_message', '')`
	// sqlDeadTrips is the block's retries_from_dlq, 0 when absent or not
	// a whole number a block could hold (a block written by hand).
	sqlDeadTrips      = `CASE WHEN ` + sqlDeadBlock + `->>'retries_from_dlq' ~ '^[0-9]{1,9}$' THEN (` + sqlDeadBlock + `->>'retries_from_dlq')::int ELSE 0 END`
	sqlDeadGroupExprs = `coalesce(` + sqlDeadKind + `, '') AS kind,
		coalesce(` + sqlDeadBlock + `->>'source_queue', '') AS source_queue,
		coalesce(` + sqlDeadBlock + `->>'error_class', '') AS error_class,
		pgbus.dlq_error_norm(` + sqlDeadBlock + `->>'error_message') AS error_norm`
	sqlDeadGroupCols = `dlq, source_queue, kind, error_class, error_norm`
)

// summaryFromScan summarizes the DLQs of q by reading every message q
// selects; it returns the largest MaxDeadGroups groups and the number of
// groups and of their messages.
func summaryFromScan(ctx context.Context, tx pgx.Tx, q *deadQuery, after *DeadGroup) ([]DeadGroup, deadTotals, error) {
	cols := `msg_id, enqueued_at, ` + sqlDeadGroupExprs + `, ` + sqlDeadMessage + ` AS msg, ` + sqlDeadTrips + ` AS trips,
		` + sqlDeadBlock + `->>'reason' AS reason, pgbus.dlq_cause_key(headers, message)::text AS group_key`
	return groupsInChunks(ctx, tx, q, after, func(cq *deadQuery) string {
		return `SELECT ` + sqlDeadGroupCols + `, count(*) AS n, min(enqueued_at) AS first_at, max(enqueued_at) AS last_at,
			coalesce(array_agg(DISTINCT reason COLLATE "C" ORDER BY reason COLLATE "C") FILTER (WHERE reason IS NOT NULL), '{}') AS reasons,
			(array_agg(msg_id ORDER BY enqueued_at DESC, msg_id DESC))[1:5] AS ids,
			(array_agg(msg ORDER BY enqueued_at DESC, msg_id DESC))[1] AS msg,
			(array_agg(trips ORDER BY enqueued_at DESC, msg_id DESC))[1] AS trips,
			min(group_key) AS group_key
		FROM (` + cq.union(cols, nil, "") + `) u
		GROUP BY ` + sqlDeadGroupCols
	})
}

// groupsInChunks reads the groups of q's DLQs a chunk of DLQs at a time
// (inChunks), groups giving the statement of a chunk's groups as
// pageOfGroups takes it: of each chunk the largest MaxDeadGroups ranked
// after the group after, which hold the largest MaxDeadGroups of all
// (a group is of one DLQ), unsorted, and the counts of all of them added
// up. As a statement over every DLQ at once counted them, the counts are
// 0 when no group ranks after the group after.
func groupsInChunks(ctx context.Context, tx pgx.Tx, q *deadQuery, after *DeadGroup, groups func(cq *deadQuery) string) ([]DeadGroup, deadTotals, error) {
	var out []DeadGroup
	var total deadTotals
	err := inChunks(ctx, tx, q.dlqs, func(tx pgx.Tx, chunk []string) error {
		cq := q.chunk(chunk)
		sql := pageOfGroups(cq, groups(cq), after)
		gs, t, err := collectGroups(tx.Query(ctx, sql, cq.args...))
		out, total = append(out, gs...), total.add(t)
		return err
	})
	if err != nil {
		return nil, deadTotals{}, err
	}
	if len(out) == 0 {
		total = deadTotals{}
	}
	return out, total, nil
}

// ErrorPatterns returns each message as dead-letter groups compare it
// (pgbus.dlq_error_norm), in order: what a group's pattern would be had
// its message been msgs[i]. Views use it to show the pattern of a message
// whose secrets they redacted, since a pattern made from the stored one
// may keep a secret whose key it replaced.
func (s *Store) ErrorPatterns(ctx context.Context, msgs []string) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	rows, err := s.reads.Query(ctx, `SELECT pgbus.dlq_error_norm(m) FROM unnest($1::text[]) WITH ORDINALITY AS t(m, i) ORDER BY i`, msgs)
	if err != nil {
		return nil, fmt.Errorf("store: error patterns: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: error patterns: %w", err)
	}
	return out, nil
}

// summaryProbe lets tests see which DLQs a summary read message by
// message, or make it read them all so (export_test.go).
type summaryProbe struct {
	scanOnly bool
	// indexAlways reads through the group index every DLQ that has it,
	// whatever it costs (indexPays).
	indexAlways bool
	mu          sync.Mutex
	scanned     []string
	// probed counts the groups probeDeadGroups probed in full.
	probed int
}

type summaryProbeKey struct{}

// probeOf is ctx's probe, or nil.
func probeOf(ctx context.Context) *summaryProbe {
	p, _ := ctx.Value(summaryProbeKey{}).(*summaryProbe)
	return p
}

// only reports whether p makes summaries read every message.
func (p *summaryProbe) only() bool { return p != nil && p.scanOnly }

// indexed reports whether p makes summaries read through the group
// index wherever it can.
func (p *summaryProbe) indexed() bool { return p != nil && p.indexAlways }

// fullyProbed counts n groups probed in full.
func (p *summaryProbe) fullyProbed(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probed += n
}

func (p *summaryProbe) saw(dlqs []string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scanned = append(p.scanned, dlqs...)
}

// collectGroups reads the groups of a summary's statement (pageOfGroups),
// each row a group but the one marked, which holds the counts of every
// group the statement counted.
func collectGroups(rows pgx.Rows, err error) ([]DeadGroup, deadTotals, error) {
	if err != nil {
		return nil, deadTotals{}, err
	}
	var total deadTotals
	groups := []DeadGroup{}
	var g DeadGroup
	var counts bool
	var t deadTotals
	_, err = pgx.ForEachRow(rows, []any{&counts, &g.DLQ, &g.SourceQueue, &g.Kind, &g.ErrorClass, &g.ErrorPattern, &g.Count, &g.FirstDeadAt, &g.LastDeadAt,
		&g.Reasons, &g.SampleMsgIDs, &g.ErrorMessage, &g.RetriesFromDLQ, &g.Group, &t.groups, &t.messages, &t.afterGroups, &t.afterMessages}, func() error {
		if counts {
			total = t
		} else {
			groups = append(groups, g)
		}
		g = DeadGroup{}
		return nil
	})
	return groups, total, err
}

// orNull is v as a parameter of a filter that "" leaves out: NULL for "".
func orNull(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
