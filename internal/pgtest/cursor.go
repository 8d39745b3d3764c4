package pgtest

import (
	"encoding/base64"
	"testing"
)

// TamperCursor returns cursor (a DLQ page cursor) with one byte of what it
// encodes changed, as a client forging a position would.
func TamperCursor(tb testing.TB, cursor string) string {
	tb.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) < 2 {
		tb.Fatalf("pgtest: %q is not a DLQ page cursor: %v", cursor, err)
	}
	raw[len(raw)/2] ^= 0x01
	return base64.RawURLEncoding.EncodeToString(raw)
}
