package embedpg

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// lastLines returns at most n trailing non-empty lines of out, for error
// messages that quote a tool's output.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shortHash names a per-data-directory path: 8 hex digits of SHA-256.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
