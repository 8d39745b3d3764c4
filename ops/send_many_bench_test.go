package ops_test

import (
	"encoding/json"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// repeatSource is a PayloadSource of n copies of one payload, given in
// the same buffer, as a reader of lines gives them.
type repeatSource struct {
	n       int
	payload []byte
	buf     []byte
}

func (s *repeatSource) Each(yield func(json.RawMessage, int) error) error {
	for i := range s.n {
		s.buf = append(s.buf[:0], s.payload...)
		if err := yield(s.buf, i+1); err != nil {
			return err
		}
	}
	return nil
}

// peakHeap samples the bytes of live and not yet collected heap objects
// until stop is called, which returns the most it saw, in MiB.
func peakHeap() (stop func() float64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() float64 {
		close(done)
		wg.Wait()
		return float64(peak) / (1 << 20)
	}
}

// BenchmarkSendManyLarge measures SendMany of 30 payloads of 8 MiB, 240
// MiB in all, held (payloads) or read from a source (source); its
// peak-heap-MiB is the most heap the call took at once, the input held
// by the benchmark included for payloads, which a command that reads a
// file must hold too to send them that way.
func BenchmarkSendManyLarge(b *testing.B) {
	s := testStore(b)
	svc := newService(b, s, ops.Options{})
	ctx := pgtest.Context(b)
	payload := []byte(`"` + strings.Repeat("x", ops.MaxPayloadBytes-2) + `"`)
	const n = 30
	for _, held := range []bool{true, false} {
		name := map[bool]string{true: "payloads", false: "source"}[held]
		b.Run(name, func(b *testing.B) {
			q := newQueue(b, s, nil)
			peak := 0.0
			for b.Loop() {
				stop := peakHeap()
				req := ops.SendManyRequest{Queue: q}
				if held {
					req.Payloads = make([]json.RawMessage, n)
					for i := range req.Payloads {
						req.Payloads[i] = append(json.RawMessage(nil), payload...)
					}
				} else {
					req.Source = &repeatSource{n: n, payload: payload}
				}
				out, err := svc.SendMany(ctx, req)
				peak = max(peak, stop())
				if err != nil || len(out.MsgIDs) != n {
					b.Fatalf("%d sent, %v; want %d", len(out.MsgIDs), err, n)
				}
			}
			b.ReportMetric(peak, "peak-heap-MiB")
			b.SetBytes(n * int64(len(payload)))
		})
	}
}
