package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A summary by error class names at most 10 DLQs of a class, the most
// touched first, and counts the others; over the response bound it lists
// the largest classes, says how many classes and messages it left out,
// and stays under the bound, where asked for all (a page a person
// scrolls) it lists every class.
func TestSummaryByClassBounded(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	const bound = 3000
	svc := newService(t, s, ops.Options{Bounds: ops.Bounds{Response: bound}})
	var queues []string
	for i := range 12 {
		q := newQueue(t, s, nil)
		queues = append(queues, q)
		pgtest.DeadLetterN(t, s, q, 1+i, pgtest.DeadSpec{Kind: "k", Class: "net.Timeout", Message: "timeout"})
	}
	const classes = 40
	for i := range classes {
		pgtest.DeadLetterN(t, s, queues[0], 1, pgtest.DeadSpec{Kind: "k", Class: fmt.Sprintf("app.Error%02d_%s", i, strings.Repeat("x", 40)), Message: "m"})
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{By: ops.SummaryByErrorClass})
	if err != nil {
		t.Fatal(err)
	}
	top := sum.Classes[0]
	if top.ErrorClass != "net.Timeout" || len(top.Queues) != 10 || top.QueuesOmitted != 2 || top.Queues[0].DLQ != queues[11]+"_dlq" || top.Count != 78 {
		t.Errorf("largest class %+v; want net.Timeout in 10 DLQs listed, %s first, 2 omitted, 78 messages", top, queues[11])
	}
	if !sum.Truncated || len(sum.Classes) >= classes+1 || sum.TotalClasses != classes+1 || sum.Total+sum.MessagesOmitted != 78+classes {
		t.Errorf("%d of %d classes listed, truncated %v, %d + %d omitted messages; want a cut that counts what it left out", len(sum.Classes), sum.TotalClasses, sum.Truncated, sum.Total, sum.MessagesOmitted)
	}
	if len(sum.Notes) != 1 || !strings.Contains(sum.Notes[0], fmt.Sprintf("of %d error classes", classes+1)) {
		t.Errorf("notes %q", sum.Notes)
	}
	if b, _ := json.Marshal(sum); utf8.RuneCount(b) > bound {
		t.Errorf("%d characters, over the bound of %d", utf8.RuneCount(b), bound)
	}
	all, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{By: ops.SummaryByErrorClass, All: true})
	if err != nil || len(all.Classes) != classes+1 || all.Truncated {
		t.Errorf("all: %d classes, truncated %v, %v; want every one", len(all.Classes), all.Truncated, err)
	}
}
