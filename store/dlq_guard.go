package store

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/plural"
)

// DeadID names one dead message: its DLQ and its id there.
type DeadID struct {
	DLQ   string `json:"dlq"`
	MsgID int64  `json:"msg_id"`
}

// deadSetDomain separates the MACs of dead sets from those of cursors,
// which share the key.
const deadSetDomain = "pgbus dead set v3\n"

// DeadSetUse names the call a dry run's token guards: the token of a
// retry's dry run does not guard a discard, nor the other way round, as
// the set a person agreed to retry is not one they agreed to discard.
type DeadSetUse string

// The calls a token guards.
const (
	DeadSetRetry   DeadSetUse = "retry"
	DeadSetDiscard DeadSetUse = "discard"
)

// other is the use that is not u.
func (u DeadSetUse) other() DeadSetUse {
	if u == DeadSetRetry {
		return DeadSetDiscard
	}
	return DeadSetRetry
}

// deadSetToken returns the token of a set of dead messages for a call of
// use: its size, a dash, and the first 128 bits of the HMAC-SHA256 of the
// use and the sorted (dlq, msg_id) pairs, each with its DLQ's table
// (tables, as dlqTables reads them), under the database's cursor key, in
// base64url. Keyed, so a token cannot be made up without reading the
// database; the size is only there for people and error messages.
func deadSetToken(key []byte, use DeadSetUse, set []DeadID, tables map[string]uint32) string {
	set = slices.Clone(set)
	slices.SortFunc(set, func(a, b DeadID) int {
		return cmp.Or(strings.Compare(a.DLQ, b.DLQ), cmp.Compare(a.MsgID, b.MsgID))
	})
	set = slices.Compact(set)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(deadSetDomain + string(use) + "\n"))
	for _, d := range set {
		fmt.Fprintf(h, "%s %d %d\n", d.DLQ, tables[d.DLQ], d.MsgID)
	}
	return strconv.Itoa(len(set)) + "-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// tokenSize returns the size a well-formed token states.
func tokenSize(token string) (int, bool) {
	n, mac, ok := strings.Cut(token, "-")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || len(mac) != 22 {
		return 0, false
	}
	_, err = base64.RawURLEncoding.DecodeString(mac)
	return size, err == nil
}

// CheckDeadSetToken reports whether token is shaped like a token of a dry
// run by filter; it does not say whether any set has that token.
func CheckDeadSetToken(token string) error {
	if _, ok := tokenSize(token); !ok {
		return invalidf("expect %q is neither the expect of a dry run nor a list of ids; run the dry run again and pass its expect", shorten(token))
	}
	return nil
}

// DeadIDsToken returns the token of the dead messages ids of queue's DLQ,
// as a dry run by filter returns it for the set it selects, so that a
// caller may name the set a guarded call must move by its ids.
func (s *Store) DeadIDsToken(ctx context.Context, use DeadSetUse, queue string, ids []int64) (string, error) {
	dlq, err := s.resolveDLQ(ctx, queue)
	if err != nil {
		return "", err
	}
	set := make([]DeadID, len(ids))
	for i, id := range ids {
		set[i] = DeadID{DLQ: dlq, MsgID: id}
	}
	return s.deadSetToken(ctx, use, set)
}

func (s *Store) deadSetToken(ctx context.Context, use DeadSetUse, set []DeadID) (string, error) {
	key, err := s.cursorKey(ctx)
	if err != nil {
		return "", err
	}
	tables, err := s.dlqTables(ctx, set)
	if err != nil {
		return "", err
	}
	return deadSetToken(key, use, set, tables), nil
}

// dlqTables returns the table (its OID) of each DLQ of set, 0 for one gone,
// which a dead set's token covers: a DLQ dropped and made again under its
// name numbers its messages from 1 again, and the token of a dry run
// before must not guard the messages of the same ids after.
func (s *Store) dlqTables(ctx context.Context, set []DeadID) (map[string]uint32, error) {
	names := make([]string, 0, len(set))
	for _, d := range set {
		if !slices.Contains(names, d.DLQ) {
			names = append(names, d.DLQ)
		}
	}
	rows, err := s.db.Query(ctx, `SELECT n, coalesce(to_regclass(format('%I.%I', 'pgmq', 'q_' || n))::oid, 0)
		FROM unnest($1::text[]) AS n`, names)
	if err != nil {
		return nil, fmt.Errorf("store: read the tables of the dead messages' DLQs: %w", err)
	}
	out := make(map[string]uint32, len(names))
	var name string
	var table uint32
	_, err = pgx.ForEachRow(rows, []any{&name, &table}, func() error {
		out[name] = table
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the tables of the dead messages' DLQs: %w", err)
	}
	return out, nil
}

func deadIDsOf(refs []deadRef) []DeadID {
	out := make([]DeadID, len(refs))
	for i, r := range refs {
		out[i] = DeadID{DLQ: r.dlq, MsgID: r.id}
	}
	return out
}

// selectDead returns the messages f selects, oldest first, up to limit,
// and whether f selects more than limit.
func (s *Store) selectDead(ctx context.Context, f DeadFilter, limit int) ([]deadRef, bool, error) {
	var all []deadRef
	more, err := s.eachDeadPage(ctx, f, limit, func(refs []deadRef, _ int) (int, error) {
		all = append(all, refs...)
		return 0, nil
	})
	return all, more, err
}

// guarded runs move on refs in one transaction, with their rows locked,
// after checking that refs is the set expect names and that none of them
// was moved meanwhile; any failure rolls everything back, so the call
// moves exactly the expected set or nothing.
//
// The transaction runs under finishStatement, as a single statement
// does: a cancellation of ctx that landed as it committed would otherwise
// leave the set moved and the call failed. move gets the context to run
// its statements with.
func (s *Store) guarded(ctx context.Context, use DeadSetUse, refs []deadRef, expect string, move func(ctx context.Context, tx pgx.Tx) error) error {
	if err := CheckDeadSetToken(expect); err != nil {
		return err
	}
	key, err := s.cursorKey(ctx)
	if err != nil {
		return err
	}
	set := deadIDsOf(refs)
	tables, err := s.dlqTables(ctx, set)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(deadSetToken(key, use, set, tables)), []byte(expect)) {
		if hmac.Equal([]byte(deadSetToken(key, use.other(), set, tables)), []byte(expect)) {
			return otherMoveExpect{invalidf("expect is the dry run's of a %s, and this call is a %s; nothing was moved: run this call's own dry run and pass its expect", use.other(), use)}
		}
		want, _ := tokenSize(expect)
		what := fmt.Sprintf("%d then, %d now", want, len(refs))
		if want == len(refs) {
			what = fmt.Sprintf("as many, %d, but not the same ones", want)
		}
		// A token is bound to the messages, not to the filter that chose
		// them: one from a dry run with other filters reads as a change.
		return &changedError{cause: what, msg: fmt.Sprintf("the dead messages selected changed since they were counted, by the dry run or for the confirmation asked (%s: some were moved or died since, or the dry run had other filters than this call); nothing was moved: run the dry run again with this call's filters and pass its expect", what)}
	}
	return finishStatement(ctx, func(ctx context.Context) error {
		return pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if err := lockDead(ctx, tx, refs); err != nil {
				return err
			}
			return move(ctx, tx)
		})
	})
}

// deadByDLQ groups the ids of refs by DLQ.
func deadByDLQ(refs []deadRef) map[string][]int64 {
	by := map[string][]int64{}
	for _, r := range refs {
		by[r.dlq] = append(by[r.dlq], r.id)
	}
	return by
}

// lockDead locks the rows of refs, DLQ by DLQ in name order so that two
// guarded calls cannot deadlock, and refuses when any is gone: another
// call retried or discarded it after it was selected.
func lockDead(ctx context.Context, tx pgx.Tx, refs []deadRef) error {
	by := deadByDLQ(refs)
	for _, dlq := range slices.Sorted(maps.Keys(by)) {
		ids := by[dlq]
		var n int
		sql := `SELECT count(*) FROM (SELECT 1 FROM ` + queueTable(dlq) + ` WHERE msg_id = ANY($1) ORDER BY msg_id FOR UPDATE) l`
		if err := tx.QueryRow(ctx, sql, ids).Scan(&n); err != nil {
			return queueErr(err, "lock dead messages of", dlq)
		}
		if n != len(ids) {
			return changed(fmt.Sprintf("%d of the selected dead messages of %s %s retried or discarded by another call meanwhile", len(ids)-n, dlq, plural.Of(len(ids)-n, "was", "were")),
				"nothing was moved: run the dry run again and pass its expect")
		}
	}
	return nil
}
