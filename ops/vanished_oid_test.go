package ops_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// The views of every queue (the stats of all, health, the overview, the
// gauges) are read again when PostgreSQL fails a statement of theirs as it
// fails one whose table was dropped while it ran (SQLSTATE XX000, "could
// not open relation with OID"), as they are when the table was dropped
// before it (relation does not exist). Here a policy on pgbus.queues
// fails the first read of it of a role under row security, once each time
// it is armed, in the words of a server whose messages are in German.
func TestViewsOfEveryQueueReadAgainWhenATableGoesWhileRead(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := newQueue(t, owner, nil)
	reader, readerURL := pgtest.NewRole(t, url)
	for _, sql := range []string{
		"GRANT USAGE ON SCHEMA pgmq, pgbus TO ROLE",
		"GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO ROLE",
		"CREATE SEQUENCE public.gone_once",
		"GRANT USAGE ON SEQUENCE public.gone_once TO ROLE",
		`CREATE FUNCTION public.gone_once() RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('public.gone_once') = 1 THEN
				RAISE EXCEPTION USING ERRCODE = 'XX000', MESSAGE = 'konnte Relation mit OID 424242 nicht öffnen';
			END IF;
			RETURN true;
		END $$`,
		"ALTER TABLE pgbus.queues ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY gone_once ON pgbus.queues FOR SELECT TO ROLE USING (public.gone_once())",
	} {
		pgtest.Exec(t, url, strings.ReplaceAll(sql, "ROLE", reader))
	}
	pool, err := pgxpool.New(ctx, readerURL)
	if err != nil {
		t.Fatal(err)
	}
	rs := store.New(pool)
	t.Cleanup(rs.Close)
	svc := newService(t, rs, ops.Options{})

	arm := func() { pgtest.Exec(t, url, "SELECT setval('public.gone_once', 1, false)") }
	for name, read := range map[string]func() error{
		"stats of every queue": func() error {
			st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
			if err == nil && (len(st.Queues) != 1 || st.Queues[0].Queue != q) {
				t.Errorf("stats of every queue: %+v; want %s", st.Queues, q)
			}
			return err
		},
		"health":   func() error { _, err := svc.Health(ctx); return err },
		"overview": func() error { _, err := svc.Overview(ctx, ops.OverviewRequest{}); return err },
		"gauges":   func() error { _, err := svc.Gauges(ctx); return err },
	} {
		arm()
		if err := read(); err != nil {
			t.Errorf("%s with a table gone while read: %v; want it read again", name, err)
		}
	}
}
