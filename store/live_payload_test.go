package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// A list reads as much of each payload as it asks for: all of it, the
// start of its text, or none; its size and kind come whole either way.
func TestListLiveReadsThePayloadItAsksFor(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	// As jsonb writes it: shorter keys first.
	payload := `{"note": "` + strings.Repeat("é", 1000) + `", "job_class": "Sync"}`
	if _, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(payload)}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		chars       int
		want        string
		cut, absent bool
	}{
		{chars: 0, want: payload},
		{chars: 40, want: `{"note": "` + strings.Repeat("é", 30), cut: true},
		{chars: len(payload), want: payload},
		{chars: store.LivePayloadNone, absent: true},
	} {
		page, err := s.ListLive(ctx, store.LiveFilter{Queue: q, PayloadChars: c.chars}, "", 10)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("chars %d: list = %+v, %v", c.chars, page, err)
		}
		m := page.Items[0]
		if m.Kind != "Sync" || m.PayloadBytes != len(payload) || m.PayloadCut != c.cut {
			t.Errorf("chars %d: kind %q, %d bytes, cut %v; want Sync, %d bytes, cut %v", c.chars, m.Kind, m.PayloadBytes, m.PayloadCut, len(payload), c.cut)
		}
		if c.absent && m.Payload != nil || !c.absent && string(m.Payload) != c.want {
			t.Errorf("chars %d: payload %.80q, want %.80q", c.chars, m.Payload, c.want)
		}
		if c.absent {
			continue
		}
		// Read later: the list reads none, but says how much it will read,
		// and LivePayloads reads that much.
		page, err = s.ListLive(ctx, store.LiveFilter{Queue: q, PayloadChars: c.chars, PayloadLater: true}, "", 10)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("chars %d, later: list = %+v, %v", c.chars, page, err)
		}
		m = page.Items[0]
		if m.Payload != nil || m.PayloadBytes != len(payload) || m.PayloadRead != len(c.want) {
			t.Errorf("chars %d, later: payload %d bytes, payload_bytes %d, to read %d; want none, %d, %d", c.chars, len(m.Payload), m.PayloadBytes, m.PayloadRead, len(payload), len(c.want))
		}
		read, err := s.LivePayloads(ctx, m.Queue, []int64{m.MsgID, m.MsgID + 1000}, c.chars)
		if err != nil || len(read) != 1 {
			t.Fatalf("chars %d: payloads read = %v, %v; want the one message's", c.chars, read, err)
		}
		if p := read[m.MsgID]; string(p.Payload) != c.want || p.Cut != c.cut {
			t.Errorf("chars %d: payload read later %.80q, cut %v; want %.80q, cut %v", c.chars, p.Payload, p.Cut, c.want, c.cut)
		}
	}
}
