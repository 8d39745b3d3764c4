package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// sealDomain separates the MACs of sealed states from those of cursors and
// dead sets, which share the key.
const sealDomain = "pgbus sealed state v1\n"

// ErrNotSealed is returned by OpenState for a state this database did not
// seal, or one changed since: its MAC does not match, or it is not shaped
// as a sealed state at all.
var ErrNotSealed = errors.New("store: not a state this database sealed, or one altered since")

// SealState returns payload signed with the database's cursor key, for a
// caller to hand out and take back unchanged: the payload and the
// HMAC-SHA256 of it, each in base64url, separated by a dot. The payload is
// readable by whoever holds the state; only its integrity is protected.
func (s *Store) SealState(ctx context.Context, payload []byte) (string, error) {
	key, err := s.cursorKey(ctx)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sealMAC(key, payload)), nil
}

// OpenState returns the payload of a state SealState made, or ErrNotSealed
// when sealed is not one, or was changed.
func (s *Store) OpenState(ctx context.Context, sealed string) ([]byte, error) {
	key, err := s.cursorKey(ctx)
	if err != nil {
		return nil, err
	}
	p, m, ok := strings.Cut(sealed, ".")
	// Strict, so that no other spelling of the same bytes passes.
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(p)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(m)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, sealMAC(key, payload)) {
		return nil, ErrNotSealed
	}
	return payload, nil
}

func sealMAC(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(sealDomain))
	h.Write(payload)
	return h.Sum(nil)
}
