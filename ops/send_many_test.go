package ops_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// numbered is n payloads {"n": 0} to {"n": n-1}.
func numbered(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(`{"n": ` + strconv.Itoa(i) + `}`)
	}
	return out
}

// SendMany sends more payloads than one batch holds, in order, with the
// same options, as one entry of the audit log.
func TestSendManySendsInOrderAsOneAuditEntry(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("runbook") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)

	n := 2*ops.SendManyBatch + 500
	out, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Payloads: numbered(n), Kind: "reimport", Headers: map[string]any{"tenant": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.MsgIDs) != n {
		t.Fatalf("%d ids for %d payloads", len(out.MsgIDs), n)
	}
	for i, id := range out.MsgIDs {
		var got int
		var kind, tenant string
		if err := s.Pool().QueryRow(ctx, `SELECT (message->>'n')::int, headers->>'pgbus_kind', headers->>'tenant' FROM pgmq."q_`+q+`" WHERE msg_id = $1`, id).Scan(&got, &kind, &tenant); err != nil {
			t.Fatalf("message %d: %v", id, err)
		}
		if got != i || kind != "reimport" || tenant != "acme" || i > 0 && id <= out.MsgIDs[i-1] {
			t.Fatalf("id %d of payload %d holds payload %d, kind %q, tenant %q", id, i, got, kind, tenant)
		}
	}
	rows := auditRows(t, s, client)
	if len(rows) != 1 || rows[0].Tool != ops.OpSend || !strings.Contains(rows[0].Arguments, `"messages": 2500`) || !strings.Contains(rows[0].Result, `"sent": 2500`) {
		t.Fatalf("audit rows %+v; want one send of 2500 messages", rows)
	}
}

// A bad payload anywhere refuses the call before anything is sent, naming
// its index.
func TestSendManyRefusesABadPayloadBeforeSending(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)

	payloads := numbered(2500)
	payloads[1700] = json.RawMessage(`{"n": `)
	_, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Payloads: payloads})
	if !errors.Is(err, ops.ErrInvalid) || ops.PayloadIndex(err) != 1700 || !strings.Contains(err.Error(), "payload 1700") {
		t.Fatalf("a payload that is not JSON: %v (index %d); want ErrInvalid naming payload 1700", err, ops.PayloadIndex(err))
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Fatalf("%d messages sent; want none", n)
	}
	if _, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "no payloads") {
		t.Fatalf("no payloads: %v; want ErrInvalid", err)
	}
}

// A failure in PostgreSQL after some batches were sent says how many, and
// to send only the rest; the audit entry counts what was sent.
func TestSendManyFailingMidwaySaysWhatWasSent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("runbook") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)

	payloads := numbered(2500)
	payloads[1500] = json.RawMessage(`1e1000000`) // valid JSON that jsonb cannot hold
	out, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Payloads: payloads})
	var ps *ops.PartlySent
	if !errors.As(err, &ps) || ps.Sent != ops.SendManyBatch || ps.Total != 2500 {
		t.Fatalf("a payload PostgreSQL refuses in the second batch: %v; want a PartlySent of %d", err, ops.SendManyBatch)
	}
	if !strings.Contains(err.Error(), "from index 1000 on") || !strings.Contains(err.Error(), "1,000 of 2,500") {
		t.Errorf("error %q does not say what was sent and where to go on", err)
	}
	// The payload PostgreSQL refused is named by its index in the request,
	// not in its batch.
	if i := ops.PayloadIndex(err); i != 1500 || strings.Contains(err.Error(), "index 500") || ops.ErrorKind(err) != ops.KindInvalid {
		t.Errorf("error %q names payload %d (kind %s); want 1500, invalid", err, i, ops.ErrorKind(err))
	}
	if len(out.MsgIDs) != ops.SendManyBatch || pgtest.Live(t, s, q) != ops.SendManyBatch {
		t.Fatalf("%d ids returned, %d messages in the queue; want the first batch's %d", len(out.MsgIDs), pgtest.Live(t, s, q), ops.SendManyBatch)
	}
	rows := auditRows(t, s, client)
	if len(rows) != 1 || !rows[0].IsError || !strings.Contains(rows[0].Result, `"sent": 1000`) {
		t.Fatalf("audit rows %+v; want one error entry counting the 1000 sent", rows)
	}
}

// Large payloads go in transactions of at most SendManyBatchBytes, not
// SendManyBatch of them at once: three of 6 MiB, each under what a message
// may carry, are two transactions, the first of two payloads, so that no
// one statement carries the whole input (hundreds of MiB, which no database
// call timeout lets through and which the process held several times over
// to send it).
func TestSendManyBoundsEachTransactionsBytes(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)

	payload := json.RawMessage(`"` + strings.Repeat("x", 6<<20) + `"`)
	payloads := []json.RawMessage{payload, payload, payload}
	var commits []int
	out, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Payloads: payloads, Progress: func(_ []int64, sent int) {
		commits = append(commits, sent)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.MsgIDs) != 3 || pgtest.Live(t, s, q) != 3 {
		t.Fatalf("%d ids returned, %d messages in the queue; want 3", len(out.MsgIDs), pgtest.Live(t, s, q))
	}
	if len(commits) != 2 || commits[0] != 2 || commits[1] != 3 {
		t.Fatalf("transactions committed with %v payloads sent so far; want [2 3]: at most %d bytes a transaction", commits, ops.SendManyBatchBytes)
	}
}
