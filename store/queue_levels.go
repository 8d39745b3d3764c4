package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// splitLevel splits a name of the form base_p<N>, the name of priority
// level N of queue base, and reports whether name has that form.
func splitLevel(name string) (base string, level int, ok bool) {
	i := strings.LastIndex(name, "_p")
	if i <= 0 || i+2 == len(name) {
		return "", 0, false
	}
	digits := name[i+2:]
	if len(digits) > 1 && digits[0] == '0' {
		return "", 0, false // orders_p01 is no level name
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n >= MaxPriorities {
		return "", 0, false
	}
	return name[:i], n, true
}

// logicalOf returns the queue whose settings govern physical queue name:
// for a priority level, the queue it is a level of, as levels (each
// queue's priority levels, pgbus.queues.priorities) lists it; else name.
func logicalOf(name string, levels map[string]int) string {
	if base, level, ok := splitLevel(name); ok && level < levels[base] {
		return base
	}
	return name
}

// LevelIn reports whether name is a priority level of a queue of levels
// (QueueLevels), and if so of which queue and which level: a plain queue
// named like a level (jobs_p2 beside jobs with 2 levels) is none.
func LevelIn(levels map[string]int, name string) (base string, level int, ok bool) {
	base, level, ok = splitLevel(name)
	if !ok || level >= levels[base] {
		return "", 0, false
	}
	return base, level, true
}

// LevelOf reports whether name is a priority level of a queue pgbus made
// with levels, and if so of which queue (base) and which level: orders_p1
// of orders with 3 levels is, orders_p1 of orders without levels, or of
// one with 1 level, is not.
func (s *Store) LevelOf(ctx context.Context, name string) (base string, level int, ok bool, err error) {
	return levelOf(ctx, s.reads, name)
}

func levelOf(ctx context.Context, db rowQuerier, name string) (string, int, bool, error) {
	base, level, ok := splitLevel(name)
	if !ok {
		return "", 0, false, nil
	}
	var levels int
	err := db.QueryRow(ctx, `SELECT priorities FROM pgbus.queues WHERE queue_name = $1`, base).Scan(&levels)
	if err == pgx.ErrNoRows {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("store: is %q a priority level: %w", name, err)
	}
	return base, level, level < levels, nil
}

// refuseLevel refuses to create or drop, as op says, a name that is a
// priority level of another queue.
func refuseLevel(ctx context.Context, db rowQuerier, name, op string) error {
	base, level, ok, err := levelOf(ctx, db, name)
	if err != nil || !ok {
		return err
	}
	return invalidf("queue %q is priority level %d of queue %q, not a queue of its own: it cannot be %s alone; send to %q with priority %d, and create or drop %q to create or drop every level",
		name, level, base, op, base, level, base)
}

// refuseTakeover refuses to make name a queue with levels when one of the
// names its levels take is already a queue of its own, whose messages
// would become that level's, or when name itself is already a queue
// without levels that pgbus did not register (made with pgmq.create by
// another PGMQ client): workers of a queue with levels read only the
// levels, so its messages would wait unread and unseen.
func refuseTakeover(ctx context.Context, tx pgx.Tx, name string, levels int) error {
	var plain bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1) OR to_regclass($2) IS NOT NULL`,
		name, queueTable(name)).Scan(&plain); err != nil {
		return fmt.Errorf("store: create queue %q: %w", name, err)
	}
	if plain {
		return invalidf("queue %q exists already without priority levels (made by another PGMQ client), and its messages would be left unread beside the levels: drop queue %q first, once its messages are worked, or pick another name",
			name, name)
	}
	for _, physical := range physicalNames(name, levels) {
		// A queue of that name registered with levels of its own has no
		// table of the name, only its levels': the registry says it.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgmq.meta WHERE queue_name = $1)
			OR EXISTS (SELECT 1 FROM pgbus.queues WHERE queue_name = $1)`, physical).Scan(&exists); err != nil {
			return fmt.Errorf("store: create queue %q: %w", name, err)
		}
		if exists {
			return invalidf("queue %q with %d priority levels would take over queue %q, which exists already as a queue of its own, as a level: pick another name, or drop queue %q first",
				name, levels, physical, physical)
		}
	}
	return nil
}

// lockNames takes the lock of each name, in order: a queue's lock before
// its levels', so that creates and drops of both never wait on each other
// in a circle.
func lockNames(ctx context.Context, tx pgx.Tx, op string, names ...string) error {
	for _, n := range names {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('pgbus.queue:' || $1))`, n); err != nil {
			return fmt.Errorf("store: %s queue %q: lock: %w", op, n, err)
		}
	}
	return nil
}

// queueLocks lists the locks a create or drop of name takes: the queue
// whose level name may be first, then name.
func queueLocks(name string) []string {
	if base, _, ok := splitLevel(name); ok {
		return []string{base, name}
	}
	return []string{name}
}
