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

// recordingSource is a PayloadSource of n payloads {"n": 0} to {"n": n-1},
// each given on line 2i+1 in the same buffer, which it overwrites for the
// next, as a reader of lines does. It records each read: how many times
// it was read, and in each read the payloads given.
type recordingSource struct {
	n int
	// bad, when set, replaces payload badAt in every read; changed, when
	// set, replaces payload changedAt in the reads after the first.
	bad, changed     string
	badAt, changedAt int
	reads            int
	given            []int // payloads given in the last read
	onGive           func(i int)
	buf              []byte
}

func (s *recordingSource) Each(yield func(json.RawMessage, int) error) error {
	s.reads++
	s.given = s.given[:0]
	for i := range s.n {
		s.buf = append(s.buf[:0], `{"n": `+strconv.Itoa(i)+`}`...)
		switch {
		case s.bad != "" && i == s.badAt:
			s.buf = append(s.buf[:0], s.bad...)
		case s.changed != "" && i == s.changedAt && s.reads > 1:
			s.buf = append(s.buf[:0], s.changed...)
		}
		if s.onGive != nil {
			s.onGive(i)
		}
		s.given = append(s.given, i)
		if err := yield(s.buf, 2*i+1); err != nil {
			return err
		}
	}
	return nil
}

// SendMany from a source reads it twice: all of it, to check every
// payload, before it sends any, then again to send, holding at most a
// batch ahead of what it sent, however long the input; what it sent is
// each payload as given, though the source reused its bytes.
func TestSendManyFromASourceHoldsABatchAtATime(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("runbook") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)

	n := 3*ops.SendManyBatch + 500
	src := &recordingSource{n: n}
	sent, aheadMost := 0, 0
	src.onGive = func(i int) {
		if src.reads == 1 && sent > 0 {
			t.Errorf("payload %d read to check after %d were sent", i, sent)
		}
		if src.reads == 2 {
			aheadMost = max(aheadMost, i-sent)
		}
	}
	out, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Source: src, Progress: func(_ []int64, n int) {
		if src.reads != 2 {
			t.Errorf("a batch sent in read %d of the source; want the second, after the check", src.reads)
		}
		sent = n
	}})
	if err != nil {
		t.Fatal(err)
	}
	if src.reads != 2 || len(out.MsgIDs) != n || sent != n {
		t.Fatalf("source read %d times, %d ids, %d sent; want 2 reads, %d", src.reads, len(out.MsgIDs), sent, n)
	}
	// The payload after a full batch is read before that batch is sent:
	// a batch and one more, never the input.
	if aheadMost > ops.SendManyBatch {
		t.Fatalf("the send read %d payloads past what it had sent; want at most a batch, %d", aheadMost, ops.SendManyBatch)
	}
	var bad int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT (message->>'n')::int AS n, row_number() OVER (ORDER BY msg_id) - 1 AS i FROM pgmq."q_`+q+`") x WHERE n <> i`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d messages do not hold the payload given in their place (%v)", bad, err)
	}
	rows := auditRows(t, s, client)
	if len(rows) != 1 || !strings.Contains(rows[0].Arguments, `"messages": 3500`) || !strings.Contains(rows[0].Result, `"sent": 3500`) {
		t.Fatalf("audit rows %+v; want one send of 3500 messages", rows)
	}
}

// A bad last payload of a source refuses the whole call, naming it, with
// nothing sent; a source whose payload differs when read to send from
// what was checked stops before the batch holding it, the batches before
// it sent and said so.
func TestSendManyFromASourceChecksAllBeforeSending(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)

	n := 2*ops.SendManyBatch + 10
	src := &recordingSource{n: n, bad: `{"n": `, badAt: n - 1}
	_, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Source: src})
	if !errors.Is(err, ops.ErrInvalid) || ops.PayloadIndex(err) != n-1 {
		t.Fatalf("a last payload that is not JSON: %v (index %d); want ErrInvalid naming payload %d", err, ops.PayloadIndex(err), n-1)
	}
	if src.reads != 1 || pgtest.Live(t, s, q) != 0 {
		t.Fatalf("source read %d times, %d messages sent; want one read, none sent", src.reads, pgtest.Live(t, s, q))
	}

	src = &recordingSource{n: n, changed: `{"n": "other"}`, changedAt: ops.SendManyBatch + 3}
	out, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Source: src})
	var ps *ops.PartlySent
	if !errors.As(err, &ps) || ps.Sent != ops.SendManyBatch || ops.PayloadIndex(err) != ops.SendManyBatch+3 || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("a payload that changed between the reads: %v; want a PartlySent of %d naming payload %d as changed", err, ops.SendManyBatch, ops.SendManyBatch+3)
	}
	if len(out.MsgIDs) != ops.SendManyBatch || pgtest.Live(t, s, q) != ops.SendManyBatch {
		t.Fatalf("%d ids, %d messages sent; want the first batch's %d", len(out.MsgIDs), pgtest.Live(t, s, q), ops.SendManyBatch)
	}

	if _, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Source: src, Payloads: numbered(1)}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("payloads and a source: %v; want ErrInvalid", err)
	}
	if _, err := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Source: &recordingSource{}}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "no payloads") {
		t.Fatalf("an empty source: %v; want ErrInvalid saying there are no payloads", err)
	}
}
