package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// MaxReadyCheck is how many physical queues one ReadyQueues call checks:
// one statement takes a lock on each table it reads until it ends.
const MaxReadyCheck = 100

// ReadyQueues reports which of the physical queues hold a message visible
// now, in one statement: workers of idle queues ask it once per poll
// interval for all of them, where a read of each cost a transaction per
// queue and interval (hundreds of queues kept a core busy finding
// nothing). A queue dropped meanwhile fails the whole call, as a read of it
// would; its worker finds out by reading.
func (s *Store) ReadyQueues(ctx context.Context, queues []string) ([]string, error) {
	if len(queues) == 0 || len(queues) > MaxReadyCheck {
		return nil, invalidf("check queues for visible messages: pass 1 to %d queues, not %d", MaxReadyCheck, len(queues))
	}
	var sql strings.Builder
	for i, q := range queues {
		if err := ValidatePhysicalName(q); err != nil {
			return nil, err
		}
		if i > 0 {
			sql.WriteString(" UNION ALL ")
		}
		// The same condition as a read's, answered by the vt index.
		sql.WriteString("SELECT " + strconv.Itoa(i) + " WHERE EXISTS (SELECT FROM " + queueTable(q) + " WHERE vt <= clock_timestamp())")
	}
	// The text changes with the set of idle queues: sent as a simple
	// query, it does not churn the connections' prepared statements.
	rows, err := s.db.pool.Query(ctx, sql.String(), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("store: check %d queues for visible messages: %w", len(queues), err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("store: check %d queues for visible messages: %w", len(queues), err)
	}
	ready := make([]string, 0, len(found))
	for _, i := range found {
		ready = append(ready, queues[i])
	}
	return ready, nil
}
