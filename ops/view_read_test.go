package ops_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// A view of a large payload waiting for its share of the view gate has
// not read its payload yet: while one view holds the gate, the others
// hold no copy of theirs, so that views called at once do not each take
// a payload's memory while they wait.
func TestViewWaitingForTheGateHasNotReadItsPayload(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(1 << 20)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: payload})[0]
	size := int64(len(payload))
	// The call that waits counts its wait in its call timeout: a bound
	// as long as the test's context keeps a busy machine's slow read of
	// the other call's payloads from ending it.
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.FullBounds, ViewBytes: size, DatabaseCallTimeout: 2 * time.Minute})
	req := ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true}
	views, errs, readWhileWaiting := twoCallsAtTheGate(t, svc, func() (ops.DeadMessage, error) { return svc.DLQShow(ctx, req) })
	// The view holding the gate reads its payload once it holds it (or,
	// at most, before): only the waiting view's must not have been read.
	if readWhileWaiting > size {
		t.Errorf("while one view held the gate and another waited for its share, views had read %d payload bytes; want at most the %d of the view holding it, none of the waiting one's", readWhileWaiting, size)
	}
	for i, m := range views {
		if errs[i] != nil {
			t.Fatalf("view %d: %v", i, errs[i])
		}
		if !m.PayloadShown || m.PayloadTruncated || m.PayloadBytes != len(payload) {
			t.Errorf("view %d: payload shown %v, truncated %v, %d bytes; want the %d bytes shown whole", i, m.PayloadShown, m.PayloadTruncated, m.PayloadBytes, len(payload))
		}
	}
	if read := ops.ViewPayloadBytesRead(svc); read != 2*size {
		t.Errorf("the two views read %d payload bytes in all; want %d, each its payload once", read, 2*size)
	}
}

// A view that does not show its payload does not read it: the payload's
// size and the values of the safe fields come from the database, the
// payload stays there, and the view takes no share of the view gate.
func TestHiddenPayloadViewReadsNoPayload(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(1 << 20)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: payload})[0]
	fields := []string{"batch", "records.1.id", "records.0.address", "records.0.password", "missing.key"}
	want := map[string]string{
		"batch":              "export-2026-12-06",
		"records.1.id":       "1",
		"records.0.address":  `{"city":"Springfield","street":"0 Long Road","zip":"00000"}`,
		"records.0.password": ops.Redacted,
	}
	for _, c := range []struct {
		name  string
		allow bool
	}{{"payloads not allowed", false}, {"payload not asked for", true}} {
		t.Run(c.name, func(t *testing.T) {
			svc := newService(t, s, ops.Options{AllowPayloads: c.allow, SafeFields: fields})
			m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id})
			if err != nil {
				t.Fatal(err)
			}
			if m.PayloadShown || len(m.Payload) != 0 || m.PayloadPreview != "" {
				t.Errorf("payload shown %v (%d bytes, preview %d); want it hidden", m.PayloadShown, len(m.Payload), len(m.PayloadPreview))
			}
			if m.PayloadBytes != len(payload) {
				t.Errorf("payload_bytes = %d; want %d", m.PayloadBytes, len(payload))
			}
			if fmt.Sprint(m.SafeFields) != fmt.Sprint(want) {
				t.Errorf("safe fields = %v; want %v", m.SafeFields, want)
			}
			if read := ops.ViewPayloadBytesRead(svc); read != 0 {
				t.Errorf("the view read %d payload bytes from the store; want none, as it shows no payload", read)
			}
			if peak := ops.ViewBytesPeak(svc); peak != 0 {
				t.Errorf("the view took a share of %d bytes of the view gate; want none", peak)
			}
			if b, _ := json.Marshal(m); len(b) > 64<<10 {
				t.Errorf("the view is %d bytes of JSON; want it small without its payload", len(b))
			}
		})
	}
}

// twoCallsAtTheGate makes call twice, the second once the first holds
// the view gate and waits for it, and returns their results and the
// payload bytes views had read while the second waited.
func twoCallsAtTheGate[T any](t *testing.T, svc *ops.Service, call func() (T, error)) (results [2]T, errs [2]error, readWhileWaiting int64) {
	t.Helper()
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ops.WhileViewHeld(svc, func() {
		once.Do(func() {
			close(held)
			<-release
		})
	})
	var wg sync.WaitGroup
	wg.Go(func() { results[0], errs[0] = call() })
	<-held
	wg.Go(func() { results[1], errs[1] = call() })
	for ops.ViewsWaiting(svc) == 0 {
		time.Sleep(time.Millisecond)
	}
	readWhileWaiting = ops.ViewPayloadBytesRead(svc)
	close(release)
	wg.Wait()
	return results, errs, readWhileWaiting
}
