package ops_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A send stopped (Ctrl-C) while a batch's commit was on its way back
// cannot know whether that batch was sent: the server may have committed
// it. It says so, rather than that the batch was not sent, which would
// have a person send it again and put it in the queue twice.
func TestSendManyStoppedAtACommitSaysTheBatchMayHaveBeenSent(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	direct := pgtest.OpenStore(t, url)
	q := newQueue(t, direct, nil)
	proxy := pgtest.NewFreezingProxy(t, url)
	through := pgtest.OpenStore(t, proxy.URL())
	svc := newService(t, through, ops.Options{})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	var once sync.Once
	req := ops.SendManyRequest{Queue: q, Payloads: numbered(2 * ops.SendManyBatch), Progress: func(_ []int64, sent int) {
		once.Do(func() {
			// After the first batch: hold the answer to the second's
			// commit, which the server has then made, and stop the call.
			held, release := proxy.HoldWhenReceived("COMMIT")
			t.Cleanup(release)
			go func() {
				select {
				case <-held:
					cancel()
				case <-time.After(time.Minute):
				}
			}()
		})
	}}
	_, err := svc.SendMany(ctx, req)
	var ps *ops.PartlySent
	if !errors.As(err, &ps) || ps.Sent != ops.SendManyBatch {
		t.Fatalf("send stopped at the second batch's commit: %v; want a PartlySent of the first batch", err)
	}
	if live := pgtest.Live(t, direct, q); live != 2*ops.SendManyBatch {
		t.Fatalf("%d messages in the queue; want both batches, the second committed before the stop", live)
	}
	if ps.Unsure != ops.SendManyBatch {
		t.Errorf("the report counts %d sent and %d unsure: the second batch was committed, so it must not be called not sent: %v", ps.Sent, ps.Unsure, err)
	}
	for _, want := range []string{"the next 1,000 may or may not have been sent", "from index 1000 on (counting from 0) if those are not in the queue, from index 2000 on if they are"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
