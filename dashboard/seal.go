package dashboard

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// The preview of a corrected payload hands the payload to its
// confirmation form. Carried in the clear, the secrets the person typed
// would be in the page's HTML, which every other page keeps them out of;
// so the form carries the payload sealed (AES-GCM under a key derived from
// the server's), bound to the message it is for, and only this server run
// can open it.

// sealAEAD is the cipher that seals payloads.
func (s *server) sealAEAD() cipher.AEAD {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("pgbus dashboard: corrected payload"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic("dashboard: a 32-byte AES key was refused: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("dashboard: AES-GCM: " + err.Error())
	}
	return aead
}

// sealPayload seals payload for the message id of dlq.
func (s *server) sealPayload(dlq string, id int64, payload []byte) string {
	aead := s.sealAEAD()
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(payload)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("dashboard: no randomness for a nonce: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, payload, sealedFor(dlq, id)))
}

// openPayload opens what sealPayload sealed for the same message; ok is
// false for anything else (changed, for another message, or sealed by an
// earlier run of the server).
func (s *server) openPayload(dlq string, id int64, sealed string) (payload []byte, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	aead := s.sealAEAD()
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, false
	}
	payload, err = aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], sealedFor(dlq, id))
	return payload, err == nil
}

func sealedFor(dlq string, id int64) []byte {
	return []byte(dlq + "\x00" + strconv.FormatInt(id, 10))
}
