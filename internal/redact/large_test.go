package redact_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/secrettest"
)

// BenchmarkJSONLarge measures the redaction of a payload of 8 MB, the
// most a message may hold: each view of such a payload pays it.
func BenchmarkJSONLarge(b *testing.B) {
	doc := []byte(secrettest.LargeExport(8 << 20))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		out, n, ok := redact.JSON(json.RawMessage(doc))
		if !ok || n == 0 || strings.Contains(string(out[:1<<16]), "hunter") {
			b.Fatalf("redacted %d values, ok %v", n, ok)
		}
	}
}

// TestJSONLargeAllocates checks what redacting a payload of 8 MB
// allocates: its tree, its output and the redaction of its strings, not
// copies of the whole text per step or tables per key (the many views of
// one large dead message at once ran a server out of memory).
func TestJSONLargeAllocates(t *testing.T) {
	doc := []byte(secrettest.LargeExport(8 << 20))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, n, ok := redact.JSON(json.RawMessage(doc))
	runtime.ReadMemStats(&after)
	if !ok || n == 0 {
		t.Fatalf("redacted %d values, ok %v", n, ok)
	}
	if strings.Contains(string(out), "hunter") || strings.Contains(string(out), "sk_live_") {
		t.Fatal("a secret is shown")
	}
	// The race detector makes the regexp package and sync.Pool allocate
	// far more: 144 times the size, where the redaction before this bound
	// took 315.
	times := uint64(16)
	if raceOn {
		times = 220
	}
	if got, most := after.TotalAlloc-before.TotalAlloc, times*uint64(len(doc)); got > most {
		t.Errorf("redacting %d bytes allocated %d bytes (%.1f times its size); want at most %d (%d times)", len(doc), got, float64(got)/float64(len(doc)), most, times)
	}
}
