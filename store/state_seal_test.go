package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// A sealed state opens to its payload; with any character of it changed,
// with a part missing, or with the payload re-encoded under the old MAC, it
// is refused with ErrNotSealed.
func TestSealedState(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	sealed, err := s.SealState(ctx, []byte(`{"op":"dlq_discard","set":"2-abc"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.OpenState(ctx, sealed); err != nil || string(got) != `{"op":"dlq_discard","set":"2-abc"}` {
		t.Fatalf("open = %q, %v; want the payload", got, err)
	}
	payload, mac, _ := strings.Cut(sealed, ".")
	forged, _ := s.SealState(ctx, []byte(`{"op":"dlq_discard","set":"9-xyz"}`))
	forgedPayload, _, _ := strings.Cut(forged, ".")
	bad := []string{"", payload, payload + ".", "." + mac, forgedPayload + "." + mac, sealed + "A"}
	for i := range sealed {
		if c := sealed[i]; c != '.' {
			bad = append(bad, sealed[:i]+string(c^1)+sealed[i+1:])
		}
	}
	for _, b := range bad {
		if _, err := s.OpenState(ctx, b); !errors.Is(err, store.ErrNotSealed) {
			t.Fatalf("open %q = %v; want ErrNotSealed", b, err)
		}
	}
}
