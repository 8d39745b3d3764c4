package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Views of large payloads called at once take turns: the payload bytes
// they work on together never pass Options.ViewBytes, so that their
// memory does not add up, and each still shows its payload whole, secrets
// redacted. The first view holds its share until every other one waits
// for its own (or, were there no bound, has started beside it).
func TestConcurrentViewsOfLargePayloadsTakeTurns(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(1 << 20)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: payload})[0]
	want, _, ok := ops.RedactJSON(json.RawMessage(payload))
	if !ok {
		t.Fatal("the payload is no JSON")
	}
	size := int64(len(payload))
	capBytes := size + size/2 // room for one view, not two
	// Calls that wait their turn count the wait in their call timeout: a
	// bound as long as the test's keeps a busy machine's slow reads of the
	// others' payloads from ending them.
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.FullBounds, ViewBytes: capBytes, DatabaseCallTimeout: 2 * time.Minute})
	const calls = 4
	holdFirstView(svc, calls, size)
	var wg sync.WaitGroup
	views := make([]ops.DeadMessage, calls)
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			views[i], errs[i] = svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
		})
	}
	wg.Wait()
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("view %d: %v", i, errs[i])
		}
		if m := views[i]; !m.PayloadShown || m.PayloadTruncated || string(m.Payload) != string(want) || m.PayloadBytes != len(payload) {
			t.Errorf("view %d shows a payload of %d bytes (shown %v, truncated %v); want the %d bytes of the payload redacted", i, len(m.Payload), m.PayloadShown, m.PayloadTruncated, len(want))
		}
		checkShown(t, views[i])
	}
	if peak := ops.ViewBytesPeak(svc); peak > capBytes || peak < size {
		t.Errorf("the views worked on %d payload bytes at once at most; want one payload's %d, never more than the bound %d", peak, size, capBytes)
	}
	if held := ops.ViewBytesHeld(svc); held != 0 {
		t.Errorf("%d payload bytes still held after every view ended; want 0", held)
	}
}

// A payload larger than the bound is still shown: its view takes all of
// the bound.
func TestViewOfAPayloadOverTheBound(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(256 << 10)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: payload})[0]
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.FullBounds, ViewBytes: 64 << 10})
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	checkShown(t, m)
	if m.PayloadTruncated || m.PayloadBytes != len(payload) {
		t.Errorf("payload of %d bytes truncated %v; want it whole", m.PayloadBytes, m.PayloadTruncated)
	}
	if peak := ops.ViewBytesPeak(svc); peak != 64<<10 {
		t.Errorf("the view held %d payload bytes; want the whole bound, %d", peak, 64<<10)
	}
}

// A view whose context ends while others hold the bytes it needs says so,
// as its caller's stop rather than the database's, and what to do: show
// it again, or without its payload, which does not wait.
func TestViewThatCannotWaitSaysWhatToDo(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(128 << 10)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: payload})[0]
	svc := newService(t, s, ops.Options{AllowPayloads: true, ViewBytes: int64(len(payload))})
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ops.WhileViewHeld(svc, func() {
		once.Do(func() {
			close(held)
			<-release
		})
	})
	done := make(chan error, 1)
	go func() {
		_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
		done <- err
	}()
	<-held
	waitCtx, cancel := context.WithCancel(ctx)
	go func() {
		for ops.ViewsWaiting(svc) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := svc.DLQShow(waitCtx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
	// Without its payload it takes no share: it is shown while another
	// view holds them all.
	if m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id}); err != nil || m.PayloadShown {
		t.Errorf("view without payload: shown %v, %v", m.PayloadShown, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the view that held the bytes: %v", err)
	}
	var e *ops.Error
	if !errors.As(err, &e) || ops.ErrorKind(err) != ops.KindStopped || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v (kind %s); want an ops.Error of kind %s", err, ops.ErrorKind(err), ops.KindStopped)
	}
	for _, w := range []string{"views may work on at once", "try again", "without payloads"} {
		if !strings.Contains(e.Msg, w) {
			t.Errorf("message %q does not say %q", e.Msg, w)
		}
	}
	if len(e.Hints) != 1 || e.Hints[0].Op != ops.OpDLQShow || e.Hints[0].Args["msg_id"] != id {
		t.Errorf("hints = %+v; want the same message shown again", e.Hints)
	}
}

// Lists of live messages with their payloads take turns as well.
func TestConcurrentListsOfLargePayloadsTakeTurns(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(1 << 20)
	if _, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(payload)}}); err != nil {
		t.Fatal(err)
	}
	size := int64(len(payload))
	capBytes := size + size/2
	// Calls that wait their turn count the wait in their call timeout: a
	// bound as long as the test's keeps a busy machine's slow reads of the
	// others' payloads from ending them.
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.FullBounds, ViewBytes: capBytes, DatabaseCallTimeout: 2 * time.Minute})
	const calls = 3
	holdFirstView(svc, calls, size)
	var wg sync.WaitGroup
	errs := make([]error, calls)
	lists := make([]ops.LiveMessages, calls)
	for i := range calls {
		wg.Go(func() {
			lists[i], errs[i] = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: true})
		})
	}
	wg.Wait()
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("list %d: %v", i, errs[i])
		}
		if l := lists[i]; len(l.Items) != 1 || !l.Items[0].PayloadShown || l.Items[0].PayloadTruncated || strings.Contains(string(l.Items[0].Payload), "hunter") {
			t.Errorf("list %d: %d items; want the message with its payload whole and redacted", i, len(l.Items))
		}
	}
	if peak := ops.ViewBytesPeak(svc); peak > capBytes || peak < size {
		t.Errorf("the lists worked on %d payload bytes at once at most; want one payload's %d, never more than the bound %d", peak, size, capBytes)
	}
}

// holdFirstView makes the first of calls views of svc, each of size
// payload bytes, hold its share until the others wait for theirs (or,
// were there no bound, hold theirs beside it): the bound is then what
// keeps them apart, whatever the order the calls came in.
func holdFirstView(svc *ops.Service, calls int, size int64) {
	var first atomic.Bool
	ops.WhileViewHeld(svc, func() {
		if !first.CompareAndSwap(false, true) {
			return
		}
		for ops.ViewsWaiting(svc) < int64(calls-1) && ops.ViewBytesHeld(svc) <= size {
			time.Sleep(time.Millisecond)
		}
	})
}
