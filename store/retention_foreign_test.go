package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// Retention prunes only the archives of queues pgbus manages: those made
// or registered through pgbus, those a worker process works, or stopped
// working within store.WorkedWithin, and the DLQs of both. A queue another PGMQ client made and pgbus does not
// work keeps its archive, as PGMQ, which prunes no archive, keeps it: its
// owner may rely on it. So does the DLQ pgbus made for it.
func TestRetentionLeavesTheArchivesOfQueuesPGMQAloneMade(t *testing.T) {
	t.Parallel()
	script := pgtest.PGMQScript(t)
	ctx := testContext(t)
	url := pgtest.NewDatabase(t) // a database of its own: retention prunes every queue it manages
	if err := pgtest.RunSQL(t, url, script+`;
		SELECT pgmq.create('ponly'); SELECT pgmq.send('ponly', '{}'); SELECT pgmq.archive('ponly', 1::bigint);
		SELECT pgmq.create('worked'); SELECT pgmq.send('worked', '{}'); SELECT pgmq.archive('worked', 1::bigint);
		SELECT pgmq.create('lately'); SELECT pgmq.send('lately', '{}'); SELECT pgmq.archive('lately', 1::bigint);
		SELECT pgmq.create('longago'); SELECT pgmq.send('longago', '{}'); SELECT pgmq.archive('longago', 1::bigint)`); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	s := pgtest.OpenStore(t, url)
	archiveOld(t, s, "pun", 2)
	for _, q := range []string{"ponly", "worked"} {
		if err := s.CreateDLQ(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Send(ctx, store.DLQName(q), msg(`{}`)); err != nil {
			t.Fatal(err)
		}
		exec(t, s, `SELECT pgmq.archive('`+store.DLQName(q)+`', 1::bigint)`)
	}
	exec(t, s, `UPDATE pgmq.a_lately SET archived_at = now() - interval '8 days';
		UPDATE pgmq.a_longago SET archived_at = now() - interval '8 days'`)
	for _, q := range []string{"lately", "longago"} {
		if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "stopped-" + q, Hostname: "h", PID: 1, Queues: []string{q}, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.StopWorker(ctx, "stopped-"+q); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, s, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '2 days' WHERE id = 'stopped-longago'`)
	exec(t, s, `UPDATE pgmq.a_ponly SET archived_at = now() - interval '8 days';
		UPDATE pgmq.a_worked SET archived_at = now() - interval '8 days';
		UPDATE pgmq.a_ponly_dlq SET archived_at = now() - interval '31 days';
		UPDATE pgmq.a_worked_dlq SET archived_at = now() - interval '31 days'`)
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: "works-worked", Hostname: "h", PID: 1, Queues: []string{"worked"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.RunRetention(ctx, 100, 0)
	if err != nil || !rep.Ran {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	for q, want := range map[string]int{"pun": 0, "worked": 0, "worked_dlq": 0, "lately": 0, "ponly": 1, "ponly_dlq": 1, "longago": 1} {
		if got := pgtest.Archived(t, s, q); got != want {
			t.Errorf("after retention the archive of %s holds %d rows, want %d (report %+v)", q, got, want, rep.ArchivedDeleted)
		}
	}
	if _, ok := rep.ArchivedDeleted["ponly"]; ok {
		t.Errorf("report %+v names ponly, whose archive pgbus does not manage", rep.ArchivedDeleted)
	}
}
