package store

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Bounds of a breakdown of dead-letter groups by a payload field.
const (
	// MaxFieldValues is how many values a breakdown lists per group, the
	// most frequent first; the others are counted together.
	MaxFieldValues = 5
	// MaxFieldValueChars bounds each value listed, in characters.
	MaxFieldValueChars = 200
	// MaxFieldPathDepth bounds the keys of a field path.
	MaxFieldPathDepth = 8
)

// FieldBreakdown counts the messages of one group by the value of one
// payload field.
type FieldBreakdown struct {
	// Values are the MaxFieldValues most frequent values, most frequent
	// first (ties in byte order), each as text: a string as it is, any
	// other JSON value as JSON, cut to MaxFieldValueChars characters.
	Values []FieldValueCount `json:"values"`
	// Other counts the messages with a value not listed.
	Other int64 `json:"other"`
	// Missing counts the messages without the field.
	Missing int64 `json:"missing"`
}

// FieldValueCount is one value of a field and the messages that have it.
type FieldValueCount struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// validateFieldPath checks a path of keys into a payload.
func validateFieldPath(path []string) error {
	if len(path) > MaxFieldPathDepth {
		return invalidf("field path has %d keys; at most %d are allowed", len(path), MaxFieldPathDepth)
	}
	for _, k := range path {
		if k == "" || !utf8.ValidString(k) || strings.ContainsRune(k, 0) || utf8.RuneCountInString(k) > MaxDeadFilterName {
			return invalidf("field path %q has an empty, overlong or invalid key; name keys such as tenant or file.type", strings.Join(path, "."))
		}
	}
	return nil
}

// groupID names a group by what it is made of, on every path alike.
type groupID struct{ dlq, source, kind, class, pattern string }

func groupIDOf(g DeadGroup) groupID {
	return groupID{g.DLQ, g.SourceQueue, g.Kind, g.ErrorClass, g.ErrorPattern}
}

// breakDownDead sets the ByField breakdown of groups by reading the
// messages q selects of those groups, found by their keys, through each
// DLQ's index on the group key: the same on every path of the summary,
// as every path keys its groups alike. Reading every message of the
// groups' DLQs to compute each one's group again took seconds on 300,000
// dead messages.
func breakDownDead(ctx context.Context, tx pgx.Tx, q *deadQuery, groups []DeadGroup, path []string) error {
	if probeOf(ctx).only() {
		return breakDownByNames(ctx, tx, q, groups, path)
	}
	// A DLQ without a valid index on the group key would be read whole
	// once per group: its groups are broken down as before, first, as
	// that sets every group's breakdown to none.
	indexed, err := deadIndexed(ctx, tx, q.dlqs)
	if err != nil {
		return err
	}
	unindexed := slices.DeleteFunc(slices.Clone(q.dlqs), func(d string) bool {
		return indexed[d] || !slices.ContainsFunc(groups, func(g DeadGroup) bool { return g.DLQ == d })
	})
	if len(unindexed) > 0 {
		probeOf(ctx).saw(unindexed)
		nq := &deadQuery{dlqs: unindexed, conds: q.conds, args: slices.Clone(q.args)}
		if err := breakDownByNames(ctx, tx, nq, groups, path); err != nil {
			return err
		}
	}
	type key struct{ dlq, group string }
	byKey := make(map[key]*DeadGroup, len(groups))
	keysOf := map[string][]string{}
	for i := range groups {
		g := &groups[i]
		if !indexed[g.DLQ] {
			continue
		}
		g.ByField = &FieldBreakdown{Values: []FieldValueCount{}}
		byKey[key{g.DLQ, g.Group}] = g
		keysOf[g.DLQ] = append(keysOf[g.DLQ], g.Group)
	}
	where, text := "", "true"
	for _, c := range q.conds {
		if c == q.text {
			text = c
		} else {
			where += " AND " + c
		}
	}
	var holding []string // the DLQs of groups to break down
	for _, dlq := range q.dlqs {
		if len(keysOf[dlq]) > 0 {
			holding = append(holding, dlq)
		}
	}
	// A chunk of DLQs to a statement: a group is of one DLQ.
	return inChunks(ctx, tx, holding, func(tx pgx.Tx, chunk []string) error {
		q := q.chunk(chunk)
		p, chars := q.arg(path), q.arg(MaxFieldValueChars)
		parts := make([]string, len(chunk))
		for i, dlq := range chunk {
			// Keys as text, as probeDeadGroups passes them.
			// One read per group, through the index: OFFSET 0 keeps the
			// planner from joining all groups to one read of every message,
			// which computed each one's key again, and from reading an index
			// on the error text once per group (see summaryFromIndex).
			parts[i] = `(SELECT ` + q.arg(dlq) + `::text AS dlq, k.key::text AS group_key, m.v
			FROM unnest(` + q.arg(keysOf[dlq]) + `::uuid[]) AS k(key)
			CROSS JOIN LATERAL (
				SELECT left(message #>> ` + p + `::text[], ` + chars + `) AS v, headers
				FROM ` + queueTable(dlq) + ` WHERE ` + sqlCauseKey + ` = k.key` + where + ` OFFSET 0) m
			WHERE ` + text + `)`
		}
		top := q.arg(MaxFieldValues)
		rows, err := tx.Query(ctx, `
		WITH c AS (
			SELECT dlq, group_key, v, count(*) AS n FROM (`+strings.Join(parts, "\nUNION ALL\n")+`) u
			GROUP BY dlq, group_key, v
		), r AS (
			SELECT c.*, row_number() OVER (PARTITION BY dlq, group_key ORDER BY v IS NULL, n DESC, v COLLATE "C") AS i FROM c
		)
		SELECT dlq, group_key,
			coalesce(array_agg(v ORDER BY i) FILTER (WHERE v IS NOT NULL AND i <= `+top+`), '{}'),
			coalesce(array_agg(n ORDER BY i) FILTER (WHERE v IS NOT NULL AND i <= `+top+`), '{}'),
			coalesce(sum(n) FILTER (WHERE v IS NOT NULL AND i > `+top+`), 0)::bigint,
			coalesce(sum(n) FILTER (WHERE v IS NULL), 0)::bigint
		FROM r GROUP BY dlq, group_key`, q.args...)
		if err != nil {
			return err
		}
		_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
			var k key
			var values []string
			var counts []int64
			var b FieldBreakdown
			if err := r.Scan(&k.dlq, &k.group, &values, &counts, &b.Other, &b.Missing); err != nil {
				return struct{}{}, err
			}
			b.Values = make([]FieldValueCount, len(values))
			for i := range values {
				b.Values[i] = FieldValueCount{Value: values[i], Count: counts[i]}
			}
			if g := byKey[k]; g != nil {
				g.ByField = &b
			}
			return struct{}{}, nil
		})
		return err
	})
}

// breakDownByNames is breakDownDead as it was before the groups' keys
// were read: reading every message of the groups' DLQs and computing its
// group, which the tests compare breakDownDead with.
func breakDownByNames(ctx context.Context, tx pgx.Tx, q *deadQuery, groups []DeadGroup, path []string) error {
	byID := make(map[groupID]*DeadGroup, len(groups))
	for i := range groups {
		groups[i].ByField = &FieldBreakdown{Values: []FieldValueCount{}}
		byID[groupIDOf(groups[i])] = &groups[i]
	}
	q.dlqs = slices.DeleteFunc(q.dlqs, func(d string) bool {
		return !slices.ContainsFunc(groups, func(g DeadGroup) bool { return g.DLQ == d })
	})
	// A chunk of DLQs to a statement: a group is of one DLQ.
	return inChunks(ctx, tx, q.dlqs, func(tx pgx.Tx, chunk []string) error {
		q := q.chunk(chunk)
		p := q.arg(path)
		union := q.union(sqlDeadGroupExprs+`, left(message #>> `+p+`::text[], `+q.arg(MaxFieldValueChars)+`) AS v`, nil, "")
		top := q.arg(MaxFieldValues)
		rows, err := tx.Query(ctx, `
		WITH c AS (
			SELECT `+sqlDeadGroupCols+`, v, count(*) AS n FROM (`+union+`) u
			GROUP BY `+sqlDeadGroupCols+`, v
		), r AS (
			SELECT c.*, row_number() OVER (PARTITION BY `+sqlDeadGroupCols+` ORDER BY v IS NULL, n DESC, v COLLATE "C") AS i FROM c
		)
		SELECT `+sqlDeadGroupCols+`,
			coalesce(array_agg(v ORDER BY i) FILTER (WHERE v IS NOT NULL AND i <= `+top+`), '{}'),
			coalesce(array_agg(n ORDER BY i) FILTER (WHERE v IS NOT NULL AND i <= `+top+`), '{}'),
			coalesce(sum(n) FILTER (WHERE v IS NOT NULL AND i > `+top+`), 0)::bigint,
			coalesce(sum(n) FILTER (WHERE v IS NULL), 0)::bigint
		FROM r GROUP BY `+sqlDeadGroupCols, q.args...)
		if err != nil {
			return err
		}
		_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
			var id groupID
			var values []string
			var counts []int64
			var b FieldBreakdown
			if err := r.Scan(&id.dlq, &id.source, &id.kind, &id.class, &id.pattern, &values, &counts, &b.Other, &b.Missing); err != nil {
				return struct{}{}, err
			}
			b.Values = make([]FieldValueCount, len(values))
			for i := range values {
				b.Values[i] = FieldValueCount{Value: values[i], Count: counts[i]}
			}
			if g := byID[id]; g != nil {
				g.ByField = &b
			}
			return struct{}{}, nil
		})
		return err
	})
}
