package ops

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// A payload nested ten thousand deep, 20 KB, is previewed with memory in
// proportion to its size: the path of each value, written out at every
// level, cost the square of its depth, gigabytes per view. Bytes
// allocated are counted, not time, which a shared machine makes vary.
func TestShortPreviewOfADeepPayloadCostsItsSize(t *testing.T) {
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	red := json.RawMessage("[" + strings.Repeat(deep+",", 9) + deep + "]")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	preview, sh, ok := shortPreview(red, 4096)
	runtime.ReadMemStats(&after)
	if !ok || len(preview) > 4096 || sh.n == 0 || !strings.Contains(preview, ShortenedMark) {
		t.Fatalf("preview of %d bytes nested 10,000 deep: ok %v, %d bytes, %d cuts; want one under 4096 bytes with its cuts marked", len(red), ok, len(preview), sh.n)
	}
	if len(sh.places) == 0 || !strings.HasPrefix(sh.places[0], "$[0]") {
		t.Errorf("places of the cuts = %q; want paths from the payload's root", sh.places)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 {
		t.Errorf("the preview allocated %d MB for a payload of %d KB; want memory in proportion to its size", alloc>>20, len(red)>>10)
	}
}

// Paths name members and items as a view writes them.
func TestValuePathWritesMembersAndItems(t *testing.T) {
	var root *valuePath
	p := root.member("order").item(2).member("odd key")
	if got, want := p.String(), `$.order[2]["odd key"]`; got != want {
		t.Errorf("path = %s, want %s", got, want)
	}
	if got := root.String(); got != "$" {
		t.Errorf("root path = %s, want $", got)
	}
}

// BenchmarkShortPreviewDeep previews a payload of ten arrays nested
// 9,999 deep (195 KB) to 4 KB.
func BenchmarkShortPreviewDeep(b *testing.B) {
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	red := json.RawMessage("[" + strings.Repeat(deep+",", 9) + deep + "]")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := shortPreview(red, 4096); !ok {
			b.Fatal("no preview")
		}
	}
}
