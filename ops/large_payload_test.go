package ops_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// checkShown fails when a view of secrettest.LargeExport shows a secret of it.
func checkShown(tb testing.TB, m ops.DeadMessage) {
	tb.Helper()
	shown := string(m.Payload) + m.PayloadPreview
	if !m.PayloadShown || shown == "" || strings.Contains(shown, "hunter") || strings.Contains(shown, "sk_live_") {
		tb.Fatalf("payload shown %v, %d bytes, or a secret shown", m.PayloadShown, len(shown))
	}
}

// BenchmarkDLQShowLargePayload measures the view of a dead message whose
// payload is 8 MB of JSON, the most a message holds: for an agent, whose
// response bound cuts it to a preview (default), and for a person at a
// terminal, who sees it whole (full).
func BenchmarkDLQShowLargePayload(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := pgtest.Context(b)
	q := newQueue(b, s, nil)
	id := pgtest.DeadLetter(b, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: secrettest.LargeExport(8<<20 - 4<<10)})[0]
	for _, c := range []struct {
		name   string
		bounds ops.Bounds
	}{{"default", ops.Bounds{}}, {"full", ops.FullBounds}} {
		b.Run(c.name, func(b *testing.B) {
			svc := newService(b, s, ops.Options{AllowPayloads: true, Bounds: c.bounds})
			b.ReportAllocs()
			for b.Loop() {
				m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
				if err != nil {
					b.Fatal(err)
				}
				checkShown(b, m)
			}
		})
	}
}

// TestDLQShowOfALargePayloadAllocates checks what the view of a dead
// message with 8 MB of payload allocates for an agent, whose response
// bound cuts the view step by step: the payload is redacted once, not at
// each step, and each try of its preview costs what it shows. Bytes
// allocated are counted, not time.
func TestDLQShowOfALargePayloadAllocates(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	payload := secrettest.LargeExport(8<<20 - 4<<10)
	id := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom", Payload: payload})[0]
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	checkShown(t, m)
	if !m.PayloadTruncated || !m.PayloadPreviewJSON || !strings.Contains(m.PayloadPreview, `"records":[{`) || m.PayloadBytes != len(payload) {
		t.Errorf("preview %.200q, truncated %v, as JSON %v, of %d bytes; want the payload's records shortened as JSON, of %d bytes",
			m.PayloadPreview, m.PayloadTruncated, m.PayloadPreviewJSON, m.PayloadBytes, len(payload))
	}
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(20*len(payload)); got > most && !raceOn {
		t.Errorf("the view allocated %d bytes (%.1f times the payload); want at most %d (20 times)", got, float64(got)/float64(len(payload)), most)
	}
}
