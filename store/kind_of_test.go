package store_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// KindOf reads a message of Ruby pgbus's kind from its payload's top-level
// job_class, by that exact key, the last one given twice; a pgbus_kind
// header comes first.
func TestKindOfReadsJobClass(t *testing.T) {
	for _, c := range []struct {
		headers map[string]json.RawMessage
		payload string
		want    string
	}{
		{nil, `{"job_class": "Charge", "amount": 5}`, "Charge"},
		{map[string]json.RawMessage{store.HeaderKind: json.RawMessage(`"email"`)}, `{"job_class": "Charge"}`, "email"},
		{nil, `{"Job_Class": "Charge"}`, ""},
		{nil, `{"args": {"job_class": "Inner"}}`, ""},
		{nil, `{"job_class": "First", "job_class": "Last"}`, "Last"},
		{nil, `{"job_class": 7}`, "7"},
		{nil, `["job_class"]`, ""},
		{nil, `{"job_class": "Cut"`, ""},
	} {
		if got := store.KindOf(c.headers, json.RawMessage(c.payload)); got != c.want {
			t.Errorf("KindOf(%v, %s) = %q; want %q", c.headers, c.payload, got, c.want)
		}
	}
}

// KindOf of a large payload copies none of its values, which a worker
// reads for every message it runs: only the keys. Not parallel, so that
// no other test allocates while it counts; its bound is a sixteenth of
// the values, which a copy of them passes sixteen times over.
func TestKindOfCopiesNoValue(t *testing.T) {
	payload := json.RawMessage(`{"blob": "` + strings.Repeat("x", 4<<20) + `", "job_class": "Charge", "more": [` + strings.Repeat(`"yyyyyyyy",`, 1<<15) + `1]}`)
	const calls = 8
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range calls {
		if k := store.KindOf(nil, payload); k != "Charge" {
			t.Fatalf("KindOf = %q; want Charge", k)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > uint64(len(payload))/16 {
		t.Fatalf("KindOf allocated %d bytes a call for a payload of %d; want its keys only, not a copy of its values", per, len(payload))
	}
}

// BenchmarkKindOf reads the kind of a message of 8 MiB without a
// pgbus_kind header: B/op is what each read allocates.
func BenchmarkKindOf(b *testing.B) {
	payload := json.RawMessage(`{"blob": "` + strings.Repeat("x", store.MaxPayloadBytes-40) + `", "job_class": "Charge"}`)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if store.KindOf(nil, payload) != "Charge" {
			b.Fatal("no kind")
		}
	}
}
