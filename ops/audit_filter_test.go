package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// An operation name the audit log does not record is refused, saying
// which it records, instead of listing nothing as if nothing happened; the
// names of tools and commands still select their operation.
func TestAuditRefusesUnknownOperations(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, op := range []string{"bogus", "dlq_retyr", "pgbus_dlq_list", "'; DROP TABLE pgbus.audit_log; --", strings.Repeat("x", 10_000)} {
		_, err := svc.Audit(ctx, ops.AuditRequest{Op: op})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "dlq_retry, dlq_discard") {
			t.Errorf("audit of tool %.40q: %v; want ErrInvalid listing the operations recorded", op, err)
		}
	}
	for _, op := range []string{"", "all", "dlq_retry", "pgbus_dlq_retry", "dlq retry", "dlq retry-all", "queue pause", "send"} {
		if _, err := svc.Audit(ctx, ops.AuditRequest{Op: op}); err != nil {
			t.Errorf("audit of tool %q: %v", op, err)
		}
	}
}

// Every page with a next one names it with the filters of this one: the
// cursor alone would list every operation of every client after it.
func TestAuditNextPageKeepsTheFilters(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)
	for range 3 {
		if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := svc.Audit(ctx, ops.AuditRequest{Op: "queue_pause", Client: client, Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	h := findHint(t, page.Next, ops.OpAudit)
	req := ops.AuditRequest{Op: fmt.Sprint(h.Args["tool"]), Client: fmt.Sprint(h.Args["client"]), Cursor: fmt.Sprint(h.Args["cursor"]), Limit: h.Args["limit"].(int)}
	next, err := svc.Audit(ctx, req)
	if err != nil || len(next.Items) != 1 || next.Items[0].Op != ops.OpQueuePause || next.NextCursor != "" {
		t.Fatalf("following the next-page hint %+v: %+v, %v; want the third pause only", h, next, err)
	}
}
