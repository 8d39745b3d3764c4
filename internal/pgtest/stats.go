package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// SettleRowStats waits until the statistics system counts as many live
// rows in each table named (schema-qualified, such as pgmq.q_orders) as
// the table holds, so that what reads its estimate reads the count. A
// session reports its writes within a second or so of its transaction's
// end; an ANALYZE would race with that report and count them twice.
func SettleRowStats(tb testing.TB, st *store.Store, tables ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, table := range tables {
		for {
			var counted, rows int64
			err := st.Pool().QueryRow(ctx, `SELECT coalesce(pg_stat_get_live_tuples(to_regclass($1)), 0)`, table).Scan(&counted)
			if err == nil {
				err = st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&rows)
			}
			if err != nil {
				tb.Fatalf("pgtest: read the row statistics of %s: %v", table, err)
			}
			if counted == rows {
				break
			}
			select {
			case <-ctx.Done():
				tb.Fatalf("pgtest: the statistics system counts %d live rows in %s, which holds %d, after a minute", counted, table, rows)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
