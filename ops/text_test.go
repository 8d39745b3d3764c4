package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// textCall makes one operation with bad as the value of one request field.
type textCall struct {
	op, field string
	call      func(ctx context.Context, svc *ops.Service, bad string) error
}

// textCalls lists every string field of every request that is not a
// payload, header or other JSON (those have tests of their own).
func textCalls(queue string) []textCall {
	filter := func(field string, set func(*ops.DeadFilter, string)) []textCall {
		with := func(bad string) ops.DeadFilter {
			f := ops.DeadFilter{Queue: queue}
			set(&f, bad)
			return f
		}
		return []textCall{
			{ops.OpDLQSummary, field, func(ctx context.Context, svc *ops.Service, bad string) error {
				_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: with(bad)})
				return err
			}},
			{ops.OpDLQList, field, func(ctx context.Context, svc *ops.Service, bad string) error {
				_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: with(bad)})
				return err
			}},
			{ops.OpDLQRetry, field, func(ctx context.Context, svc *ops.Service, bad string) error {
				_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: with(bad), DryRun: true})
				return err
			}},
			{ops.OpDLQDiscard, field, func(ctx context.Context, svc *ops.Service, bad string) error {
				_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: with(bad)})
				return err
			}},
		}
	}
	var calls []textCall
	calls = append(calls, filter("queue", func(f *ops.DeadFilter, s string) { f.Queue = s })...)
	calls = append(calls, filter("kind", func(f *ops.DeadFilter, s string) { f.Kind = s })...)
	calls = append(calls, filter("error_class", func(f *ops.DeadFilter, s string) { f.ErrorClass = s })...)
	calls = append(calls, filter("reason", func(f *ops.DeadFilter, s string) { f.Reason = s })...)
	calls = append(calls, filter("since", func(f *ops.DeadFilter, s string) { f.Since = s })...)
	calls = append(calls, filter("until", func(f *ops.DeadFilter, s string) { f.Until = s })...)
	calls = append(calls, filter("text", func(f *ops.DeadFilter, s string) { f.Text = s })...)
	return append(calls, otherTextCalls(queue)...)
}

func otherTextCalls(queue string) []textCall {
	return []textCall{
		{ops.OpDLQList, "cursor", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: queue}, Cursor: bad})
			return err
		}},
		{ops.OpDLQShow, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: bad, MsgID: 1})
			return err
		}},
		{ops.OpDLQRetry, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Queue: bad}})
			return err
		}},
		{ops.OpDLQDiscard, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Queue: bad}})
			return err
		}},
		{ops.OpDLQPurge, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: bad, Confirm: true})
			return err
		}},
		{ops.OpQueueStats, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: bad})
			return err
		}},
		{ops.OpQueueMessages, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: bad})
			return err
		}},
		{ops.OpQueueMessages, "state", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: queue, State: bad})
			return err
		}},
		{ops.OpQueueMessages, "cursor", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: queue, Cursor: bad})
			return err
		}},
		{ops.OpQueuePause, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: bad})
			return err
		}},
		{ops.OpQueueResume, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: bad})
			return err
		}},
		{ops.OpQueueCreate, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: bad})
			return err
		}},
		{ops.OpQueueCreate, "strategy", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: queue, Settings: ops.SettingsChange{Strategy: &bad}})
			return err
		}},
		{ops.OpQueueDrop, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: bad, Confirm: true})
			return err
		}},
		{ops.OpQueuePurge, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: bad, Confirm: true})
			return err
		}},
		{ops.OpSend, "queue", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.Send(ctx, ops.SendRequest{Queue: bad, Payload: []byte(`{}`)})
			return err
		}},
		{ops.OpCircuitReset, "name", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: bad})
			return err
		}},
		{ops.OpAudit, "tool", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.Audit(ctx, ops.AuditRequest{Op: bad})
			return err
		}},
		{ops.OpAudit, "client", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.Audit(ctx, ops.AuditRequest{Client: bad})
			return err
		}},
		{ops.OpAudit, "cursor", func(ctx context.Context, svc *ops.Service, bad string) error {
			_, err := svc.Audit(ctx, ops.AuditRequest{Cursor: bad})
			return err
		}},
	}
}

// TestTextRefusedUpFront: a NUL character or bytes that are not UTF-8 in
// any request field are refused as invalid before the database is asked,
// by an error that starts with the field's name, says what is wrong and
// carries no SQLSTATE; a refused write changes nothing and, as every
// invalid request, leaves no audit entry.
func TestTextRefusedUpFront(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	client := uniqueName("text")
	svc := newService(t, s, ops.Options{})
	cctx := ops.WithClient(ctx, client)
	for _, bad := range []struct{ value, says string }{{"a\x00b", "NUL character"}, {"a\xffb", "not valid UTF-8"}} {
		for _, c := range textCalls(q) {
			err := c.call(cctx, svc, bad.value)
			what := c.op + " " + c.field + " " + bad.says
			var oe *ops.Error
			switch {
			case !errors.Is(err, ops.ErrInvalid) || !errors.As(err, &oe):
				t.Errorf("%s: err = %v, want an invalid-request error", what, err)
			case !strings.HasPrefix(oe.Msg, c.field+" cannot be used: ") || !strings.Contains(oe.Msg, bad.says) || !strings.Contains(oe.Msg, "pass UTF-8 text"):
				t.Errorf("%s: message %q does not name the field, the problem and the fix", what, oe.Msg)
			case oe.Field != c.field:
				t.Errorf("%s: Field = %q, want %q", what, oe.Field, c.field)
			case strings.Contains(oe.Msg, "SQLSTATE"):
				t.Errorf("%s: message %q carries a database error", what, oe.Msg)
			}
		}
	}
	if rows := auditRows(t, s, client); len(rows) != 0 {
		t.Errorf("refused writes were audited: %+v", rows)
	}
	if st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil || st.Queues[0].Paused {
		t.Errorf("queue %s after refused writes: %+v, %v", q, st, err)
	}
}

// TestClientNameStoredAsText: a client that names itself with text
// PostgreSQL cannot store still gets its write audited, its name with the
// bad bytes replaced.
func TestClientNameStoredAsText(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("client")
	ctx := ops.WithClient(testContext(t), client+"\x00\xff")
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	rows := auditRows(t, s, client+"\uFFFD\uFFFD")
	if len(rows) != 1 || rows[0].Tool != ops.OpQueuePause {
		t.Fatalf("audit rows of the client: %+v, want the pause", rows)
	}
}
