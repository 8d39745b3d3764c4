package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A queue created with priority levels is one sub-queue per level: send
// --priority puts a message in its level's sub-queue, pgbus work works them
// all, and a level the queue does not have is a usage error that changes
// nothing.
func TestPriorityQueues(t *testing.T) {
	t.Parallel()
	d := newDB(t)

	var created ops.QueueCreated
	d.json(t, &created, "queue", "create", "alerts", "--priorities", "3")
	if created.Queue != "alerts" || created.DLQ != "alerts_dlq" || created.Priorities != 3 || !created.Created {
		t.Fatalf("queue create --priorities 3: %+v", created)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.meta WHERE queue_name IN ('alerts_p0', 'alerts_p1', 'alerts_p2', 'alerts_dlq')`); n != 4 {
		t.Fatalf("%d of the sub-queues and the DLQ exist, want 4", n)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.meta WHERE queue_name IN ('alerts', 'alerts_p3')`); n != 0 {
		t.Fatalf("a plain alerts queue or a fourth level exists")
	}
	// Creating it again with the same levels is not an error; with others
	// it is, and changes nothing.
	if out := d.ok(t, "queue", "create", "alerts", "--priorities", "3"); !strings.Contains(out, "exists") || !strings.Contains(out, "3 priority levels") {
		t.Fatalf("second create: %q", out)
	}
	before := d.snapshot(t)
	if msg := d.fails(t, 2, "queue", "create", "alerts", "--priorities", "4"); !strings.Contains(msg, "3 priority levels") {
		t.Fatalf("create with other levels: %q", msg)
	}

	// Levels the queue does not have, and a level for a plain queue.
	// The level is refused naming the flag that gave it, as for a plain
	// queue, one payload or many.
	const levels = `pgbus: --priority 5 is out of range: queue "alerts" has priority levels 0 to 2: give one of them (0 runs first)`
	if msg := d.fails(t, 2, "send", "alerts", "{}", "--priority", "5"); !strings.Contains(msg, levels) {
		t.Fatalf("send --priority 5 to a 3-level queue: %q\nwant %q", msg, levels)
	}
	if msg := d.failsIn(t, 2, "{}\n{}\n", "send", "alerts", "--ndjson", "-", "--priority", "5"); !strings.Contains(msg, levels) {
		t.Fatalf("send --ndjson - --priority 5 to a 3-level queue: %q\nwant %q", msg, levels)
	}
	d.fails(t, 2, "send", "alerts", "{}", "--priority", "3")
	if after := d.snapshot(t); after != before {
		t.Fatalf("rejected creates and sends changed the database:\n%s\n%s", before, after)
	}
	d.ok(t, "queue", "create", "plain")
	before = d.snapshot(t)
	if msg := d.fails(t, 2, "send", "plain", "{}", "--priority", "1"); !strings.Contains(msg, `--priority 1 is out of range: queue "plain" is a plain queue, without levels`) {
		t.Fatalf("send --priority 1 to a plain queue: %q", msg)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("the rejected send changed the database:\n%s\n%s", before, after)
	}

	// --priority 2 lands in alerts_p2; no --priority in alerts_p0.
	var sent ops.Sent
	d.json(t, &sent, "send", "alerts", `{"simulate": "ok", "page": "low"}`, "--priority", "2")
	if sent.Queue != "alerts" || sent.MsgID <= 0 || sent.Priority != 2 {
		t.Fatalf("send --priority 2: %+v", sent)
	}
	if n := d.count(t, fmt.Sprintf(`SELECT count(*) FROM pgmq.q_alerts_p2 WHERE msg_id = %d AND message->>'page' = 'low'`, sent.MsgID)); n != 1 {
		t.Fatal("the message sent with --priority 2 is not in pgmq.q_alerts_p2")
	}
	if n := d.count(t, `SELECT (SELECT count(*) FROM pgmq.q_alerts_p0) + (SELECT count(*) FROM pgmq.q_alerts_p1)`); n != 0 {
		t.Fatalf("%d messages in the other levels", n)
	}
	top := strings.TrimSpace(d.ok(t, "send", "alerts", `{"simulate": "ok", "page": "high"}`))
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_alerts_p0 WHERE msg_id = `+top+` AND message->>'page' = 'high'`); n != 1 {
		t.Fatal("the message sent without --priority is not in pgmq.q_alerts_p0")
	}
	if st := d.stats(t, "alerts"); st.Depth != 2 || st.DLQ != "alerts_dlq" {
		t.Fatalf("alerts stats, summed over its levels: %+v", st)
	}

	// One worker of the queue works every level.
	d.ok(t, "work", "--queue", "alerts", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
	if n := d.count(t, fmt.Sprintf(`SELECT count(*) FROM pgmq.a_alerts_p2 WHERE msg_id = %d`, sent.MsgID)); n != 1 {
		t.Fatal("the priority 2 message was not worked and archived in pgmq.a_alerts_p2")
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.a_alerts_p0 WHERE msg_id = `+top); n != 1 {
		t.Fatal("the priority 0 message was not worked and archived in pgmq.a_alerts_p0")
	}
	if n := d.count(t, `SELECT (SELECT count(*) FROM pgmq.q_alerts_p0) + (SELECT count(*) FROM pgmq.q_alerts_p1) + (SELECT count(*) FROM pgmq.q_alerts_p2)`); n != 0 {
		t.Fatalf("%d messages left in the levels", n)
	}
	if st := d.stats(t, "alerts"); st.Depth != 0 || st.Archived != 2 || st.DLQDepth != 0 {
		t.Fatalf("alerts after work: %+v", st)
	}

	// The audit log has the sends with their level; the rejected ones are
	// not there.
	sends := d.audit(t, "--tool", "send")
	if len(sends) != 2 {
		t.Fatalf("send entries: %+v", sends)
	}
	var args struct {
		Queue    string `json:"queue"`
		Priority int    `json:"priority"`
	}
	if err := json.Unmarshal(sends[1].Arguments, &args); err != nil || args.Queue != "alerts" || args.Priority != 2 || sends[1].IsError {
		t.Errorf("the send with --priority 2: %s (%v)", sends[1].Arguments, err)
	}
}

// A worker of a priority level alone is refused, empty level or not:
// with --until-idle the empty level was idle before the workers had
// started, and the command ended with exit 0, having worked nothing.
func TestWorkOfALevelAloneIsRefusedUntilIdle(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "jobs", "--priorities", "3")
	msg := d.fails(t, 2, "work", "--queue", "jobs_p1", "--handler", "demo", "--until-idle", "--for", "30s")
	if !strings.Contains(msg, `work queue "jobs" instead`) {
		t.Fatalf("work of an empty level until idle: %q; want it refused, naming the queue to work", msg)
	}
}
