package mcpserver_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// pgbus_queue_run_now over Streamable HTTP, with mcp-go's client: the
// queue's retrying message is made visible, and the call is audited with
// the transport it came over.
func TestQueueRunNowOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	id := pgtest.Retrying(t, s, q)
	c := streamableClient(t, deps(t, s), "")
	connect(t, c)
	var out ops.QueueRunNow
	structured(t, callTool(t, c, "pgbus_queue_run_now", map[string]any{"queue": q}), &out)
	if out.Visible != 1 || out.Queue != q {
		t.Fatalf("run now over HTTP = %+v; want 1 made visible", out)
	}
	got, err := s.Read(testContext(t), q, time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("a read after run now = %+v, %v; want message %d", got, err, id)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE tool = 'queue_run_now' AND transport = '`+mcpserver.TransportHTTP+`' AND arguments->>'queue' = '`+q+`'`); n != 1 {
		t.Errorf("%d audit entries of the run now over http, want 1", n)
	}
}
