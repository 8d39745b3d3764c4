package redact_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/redact"
)

// A text cut at its start shows neither what the cut left of its first
// line nor a private key whose BEGIN line the cut took; whole lines after
// it are redacted as any text.
func TestClipped(t *testing.T) {
	for in, want := range map[string]string{
		"word=MsgCutSecret22 rest\nnext line":                                           "next line",
		"d = MsgCutSecret22\npassword = Hunter2x then":                                  "password = [REDACTED] then",
		"ve_51ExecSecretABCDEF failed":                                                  "",
		"AAAApartial\nBBBBwhole\n-----END RSA PRIVATE KEY-----\nafter":                  "[REDACTED]\nafter",
		"IN RSA PRIVATE KEY-----\nBBBBwhole\n-----END RSA PRIVATE KEY-----\nafter":      "[REDACTED]\nafter",
		"cut\n-----BEGIN PRIVATE KEY-----\nBBBBwhole\n-----END PRIVATE KEY-----\nafter": "-----BEGIN PRIVATE KEY-----[REDACTED]\nafter",
		"cut\nplain line\n\tat main.go:42":                                              "plain line\n\tat main.go:42",
	} {
		if got, _ := redact.Clipped(in); got != want {
			t.Errorf("Clipped(%q)\n  = %q\nwant %q", in, got, want)
		}
	}
}
