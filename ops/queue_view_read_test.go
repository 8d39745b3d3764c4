package ops_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// sendPayloads sends payload n times to a new queue, with a kind header,
// and returns the queue.
func sendPayloads(t *testing.T, s *store.Store, payload string, n int) string {
	t.Helper()
	q := newQueue(t, s, nil)
	msgs := make([]store.NewMessage, n)
	for i := range msgs {
		msgs[i] = store.NewMessage{Payload: json.RawMessage(payload), Headers: json.RawMessage(`{"` + store.HeaderKind + `":"export"}`)}
	}
	if _, err := s.SendBatch(testContext(t), q, msgs); err != nil {
		t.Fatal(err)
	}
	return q
}

// A list of live messages waiting for its share of the view gate has not
// read its payloads yet: while one list holds the gate, the others hold
// no copy of theirs, so that lists called at once do not each take their
// payloads' memory while they wait.
func TestQueueMessagesWaitingForTheGateHaveNotReadTheirPayloads(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	payload := secrettest.LargeExport(1 << 20)
	q := sendPayloads(t, s, payload, 2)
	// Each list reads both payloads whole (FullBounds), and the gate holds
	// one list's.
	size := int64(2 * len(payload))
	// The call that waits counts its wait in its call timeout: a bound
	// as long as the test's context keeps a busy machine's slow read of
	// the other call's payloads from ending it.
	svc := newService(t, s, ops.Options{AllowPayloads: true, Bounds: ops.FullBounds, ViewBytes: size, DatabaseCallTimeout: 2 * time.Minute})
	req := ops.QueueMessagesRequest{Queue: q, IncludePayload: true}
	lists, errs, readWhileWaiting := twoCallsAtTheGate(t, svc, func() (ops.LiveMessages, error) { return svc.QueueMessages(ctx, req) })
	// The list holding the gate reads its payloads once it holds it (or,
	// at most, before): only the waiting list's must not have been read.
	if readWhileWaiting > size {
		t.Errorf("while one list held the gate and another waited for its share, lists had read %d payload bytes; want at most the %d of the list holding it, none of the waiting one's", readWhileWaiting, size)
	}
	for i, l := range lists {
		if errs[i] != nil {
			t.Fatalf("list %d: %v", i, errs[i])
		}
		if len(l.Items) != 2 {
			t.Fatalf("list %d: %d messages; want 2", i, len(l.Items))
		}
		for _, m := range l.Items {
			if !m.PayloadShown || m.PayloadTruncated || m.PayloadBytes != len(payload) || len(m.Payload) == 0 || m.Kind != "export" {
				t.Errorf("list %d, message %d: payload shown %v, truncated %v, %d bytes (%d shown), kind %q; want the %d bytes shown whole, of kind export",
					i, m.MsgID, m.PayloadShown, m.PayloadTruncated, m.PayloadBytes, len(m.Payload), m.Kind, len(payload))
			}
		}
	}
	if read := ops.ViewPayloadBytesRead(svc); read != 2*size {
		t.Errorf("the two lists read %d payload bytes in all; want %d, each its payloads once", read, 2*size)
	}
}

// A list whose payloads are cut reads the start of each it previews,
// after it holds its share of the view gate, which is as large as what
// it reads: the same preview and notes as a list that read them first.
func TestQueueMessagesReadTheStartOfEachPayloadOnceHeld(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	payload := secrettest.LargeExport(1 << 20)
	q := sendPayloads(t, s, payload, 1)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	var heldRead int64 = -1
	ops.WhileViewHeld(svc, func() { heldRead = ops.ViewPayloadBytesRead(svc) })
	out, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: true})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("list = %d messages, %v", len(out.Items), err)
	}
	if heldRead != 0 {
		t.Errorf("once the list held its share of the view gate, it had read %d payload bytes; want none before it", heldRead)
	}
	read, peak := ops.ViewPayloadBytesRead(svc), ops.ViewBytesPeak(svc)
	if read == 0 || read >= int64(len(payload)) || peak != read {
		t.Errorf("the list read %d payload bytes with a share of %d; want the start of the %d-byte payload, its share as large", read, peak, len(payload))
	}
	m := out.Items[0]
	if !m.PayloadShown || !m.PayloadTruncated || !m.PayloadPreviewJSON || m.PayloadBytes != len(payload) {
		t.Errorf("payload shown %v, truncated %v, JSON %v, %d bytes; want a JSON preview of the %d bytes", m.PayloadShown, m.PayloadTruncated, m.PayloadPreviewJSON, m.PayloadBytes, len(payload))
	}
	if v := decodePreview(t, m.PayloadPreview); v["batch"] != "export-2026-12-06" {
		t.Errorf("preview %.300s; want its batch read", m.PayloadPreview)
	}
	if !hasNoteWith(out.Notes, "payload longer than", "previewed from its first") {
		t.Errorf("no note says the payload was previewed from its start: %v", out.Notes)
	}
}

// A list that does not show payloads does not read them: each payload's
// size and the message's kind come from the database, the payloads stay
// there, and the list takes no share of the view gate.
func TestQueueMessagesWithHiddenPayloadsReadNoPayload(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	payload := secrettest.LargeExport(1 << 20)
	q := sendPayloads(t, s, payload, 3)
	for _, c := range []struct {
		name  string
		allow bool
	}{{"payloads not allowed", false}, {"payloads not asked for", true}} {
		t.Run(c.name, func(t *testing.T) {
			svc := newService(t, s, ops.Options{AllowPayloads: c.allow, Bounds: ops.FullBounds})
			out, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
			if err != nil || len(out.Items) != 3 {
				t.Fatalf("list = %d messages, %v", len(out.Items), err)
			}
			for _, m := range out.Items {
				if m.PayloadShown || len(m.Payload) != 0 || m.PayloadPreview != "" {
					t.Errorf("message %d: payload shown %v (%d bytes, preview %d); want it hidden", m.MsgID, m.PayloadShown, len(m.Payload), len(m.PayloadPreview))
				}
				if m.PayloadBytes != len(payload) || m.Kind != "export" {
					t.Errorf("message %d: payload_bytes = %d, kind %q; want %d, export", m.MsgID, m.PayloadBytes, m.Kind, len(payload))
				}
			}
			if !hasNoteWith(out.Notes, "payload hidden") {
				t.Errorf("no note says the payloads are hidden: %v", out.Notes)
			}
			if read := ops.ViewPayloadBytesRead(svc); read != 0 {
				t.Errorf("the list read %d payload bytes from the store; want none, as it shows no payload", read)
			}
			if peak := ops.ViewBytesPeak(svc); peak != 0 {
				t.Errorf("the list took a share of %d bytes of the view gate; want none", peak)
			}
		})
	}
}
