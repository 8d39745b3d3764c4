package ops_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// bigPayloads sends n payloads of about 6 MB each to a new queue, a small
// field before the long one and another after it (as jsonb orders keys:
// shorter first), and returns the queue and the payloads' stored size.
func bigPayloads(t testing.TB, s *store.Store, n int) (string, int) {
	t.Helper()
	q := newQueue(t, s, nil)
	payload := `{"id": 7, "blob": "` + strings.Repeat("x", 6<<20) + `", "tenant": "acme"}`
	msgs := make([]store.NewMessage, n)
	for i := range msgs {
		msgs[i] = store.NewMessage{Payload: json.RawMessage(payload)}
	}
	if _, err := s.SendBatch(testContext(t), q, msgs); err != nil {
		t.Fatal(err)
	}
	return q, len(payload)
}

// allocated returns the bytes f allocates. Bytes are counted, not time,
// which a shared machine makes vary; the test is not parallel, so that
// no other test's allocations are counted with it.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A list of live messages costs what it shows, not what is stored: of a
// queue of payloads of megabytes it reads the start of each that its
// preview shows, or none when it shows none, and still tells each
// payload's whole size. Read whole, the four payloads of 6 MB cost
// hundreds of megabytes.
func TestQueueMessagesReadsWhatItShowsOfLargePayloads(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	q, size := bigPayloads(t, s, 4)
	for _, asked := range []bool{true, false} {
		var out ops.LiveMessages
		var err error
		alloc := allocated(func() {
			out, err = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: asked})
		})
		// The response bound may list fewer: their previews are 4 KB each.
		if err != nil || len(out.Items) == 0 {
			t.Fatalf("payload asked %v: list = %d messages, %v", asked, len(out.Items), err)
		}
		if alloc > 16<<20 {
			t.Errorf("payload asked %v: the list of 4 payloads of %d bytes allocated %d MB; want what it shows", asked, size, alloc>>20)
		}
		for _, m := range out.Items {
			if m.PayloadBytes != size || m.Payload != nil {
				t.Fatalf("payload asked %v: payload_bytes %d, payload %d bytes; want %d and only a preview", asked, m.PayloadBytes, len(m.Payload), size)
			}
			if !asked {
				continue
			}
			if !m.PayloadShown || !m.PayloadTruncated || !m.PayloadPreviewJSON || len(m.PayloadPreview) > ops.DefaultBounds.ListPayload {
				t.Fatalf("shown %v, truncated %v, JSON %v, preview %d bytes; want a JSON preview within %d", m.PayloadShown, m.PayloadTruncated, m.PayloadPreviewJSON, len(m.PayloadPreview), ops.DefaultBounds.ListPayload)
			}
			v := decodePreview(t, m.PayloadPreview)
			if v["id"] != json.Number("7") || !strings.Contains(m.PayloadPreview, ops.ShortenedMark) {
				t.Errorf("preview %.300s; want the id read and the cut marked", m.PayloadPreview)
			}
		}
		if asked && !hasNoteWith(out.Notes, "payloads longer than", "previewed from their first") {
			t.Errorf("no note says the payloads were previewed from their start: %v", out.Notes)
		}
	}
}

// BenchmarkQueueMessagesLargePayloads lists 4 live messages of 6 MB each
// with their payloads.
func BenchmarkQueueMessagesLargePayloads(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	svc := newService(b, s, ops.Options{AllowPayloads: true})
	q := newQueue(b, s, nil)
	payload := json.RawMessage(`{"id": 7, "blob": "` + strings.Repeat("x", 6<<20) + `"}`)
	if _, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: payload}, {Payload: payload}, {Payload: payload}, {Payload: payload}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, IncludePayload: true}); err != nil || len(out.Items) == 0 {
			b.Fatalf("list = %d messages, %v", len(out.Items), err)
		}
	}
}
