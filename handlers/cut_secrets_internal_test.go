package handlers

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// cutSecrets are lines of a downstream's output holding a secret, and the
// secret: no part of it may survive any cut.
var cutSecrets = []struct{ line, value string }{
	{"connecting with password=MsgCutSecret22 to the ledger", "MsgCutSecret22"},
	{"connecting with password = MsgCutSpaced33 to the ledger", "MsgCutSpaced33"},
	{`body {"user":"ada","password":"Msg Cut Quoted44"} refused`, "Msg Cut Quoted44"},
	{"401 from upstream: Authorization: Bearer MsgCutBrr55xyz", "MsgCutBrr55xyz"},
	{"charge failed with sk_live_51MsgCutStripe66 in live mode", "sk_live_51MsgCutStripe66"},
	{"dial postgres://svc:MsgCutDSN77@db.internal/app failed", "MsgCutDSN77"},
}

// pemKey is a private key as a command may print it.
const pemKey = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3XQmZ3m\nKJ8c0PnR1fKzT9wYl2XbVdQnHcR4sUe8\n-----END RSA PRIVATE KEY-----"

// leaked returns the end of secret (5 bytes or more) that out shows: what
// a cut before it, or in it, would leave.
func leaked(out, secret string) string {
	for i := 0; len(secret)-i >= 5; i++ {
		if strings.Contains(out, secret[i:]) {
			return secret[i:]
		}
	}
	return ""
}

// Wherever the last-lines cut and the failure history's cut from the end
// land, in a key, between key and value or in the value, no part of the
// secret is left. Not parallel: it only computes, the longest of the
// package's tests, and beside the others it slowed them all down.
func TestCutsFromTheEndLeaveNoSecret(t *testing.T) {
	for _, sec := range cutSecrets {
		head := "filler filler " + sec.line + " "
		// k bytes after the line put each cut in it, or just around it.
		text := func(k int) string { return shownText([]byte(head+strings.Repeat("z", k)+"\n"), false, nil) }
		for k := outputBytes - len(sec.line) - 5; k <= outputBytes; k++ {
			if out := lastLines(text(k), outputLines, outputBytes); leaked(out, sec.value) != "" {
				t.Fatalf("lastLines shows %q of %q:\n%s", leaked(out, sec.value), sec.value, out)
			}
		}
		for k := engineKeep - len(sec.line) - 5; k <= engineKeep; k++ {
			if out := output("stderr", text(k), false, true); leaked(out.Text, sec.value) != "" {
				t.Fatalf("output shows %q of %q:\n%s", leaked(out.Text, sec.value), sec.value, out.Text)
			}
		}
	}
}

// engineKeep is how many characters the failure history keeps.
const engineKeep = 2000

// An output longer than MaxCapture is kept by its end, cut at any byte:
// wherever that cut lands in a secret (a private key too), no part of it
// is left, and the whole lines after it are.
func TestClippedOutputLeavesNoSecret(t *testing.T) {
	cases := append([]struct{ line, value string }{}, cutSecrets...)
	cases = append(cases, struct{ line, value string }{pemKey, "q7BFUpkGp3XQmZ3m\nKJ8c0PnR1fKzT9wYl2XbVdQnHcR4sUe8"})
	for _, sec := range cases {
		for j := range len(sec.line) {
			var c capture
			// One write: the tail keeps its last tailKeep bytes, which
			// start j bytes into the line.
			last := "\nfatal: the ledger refused the entry\n"
			end := sec.line[j:] + "\n" + strings.Repeat("b", tailKeep-len(sec.line[j:])-1-len(last)) + last
			_, _ = c.Write([]byte(strings.Repeat("a", MaxCapture) + "\n" + sec.line[:j] + end))
			if !c.clipped() || !strings.HasPrefix(string(c.last()), sec.line[j:]) {
				t.Fatalf("the capture kept %q…, want it to start %q", c.last()[:20], sec.line[j:])
			}
			text := c.shown()
			for _, out := range []string{text, lastLines(text, outputLines, outputBytes), output("stderr", text, true, true).Text} {
				if l := leaked(out, strings.ReplaceAll(sec.value, "\n", "")); l != "" || leaked(out, sec.value) != "" {
					t.Fatalf("cut at %d of %q: %q shows part of the secret", j, sec.line, out)
				}
			}
			if !strings.HasPrefix(text, "…") || !strings.HasSuffix(text, "\nfatal: the ledger refused the entry") {
				t.Fatalf("cut at %d of %q: %q; want the lines after the cut, marked as cut", j, sec.line, text)
			}
		}
	}
}

// Text without secrets reads as it was written; a cut marks itself.
func TestShownTextKeepsPlainText(t *testing.T) {
	if got := shownText([]byte("order 42 failed\n\tat ledger.go:17\r\n\n"), false, nil); got != "order 42 failed\n\tat ledger.go:17" {
		t.Errorf("shownText = %q", got)
	}
	if got := shownText([]byte("cut partial line\nwhole line\n"), true, nil); got != "…whole line" {
		t.Errorf("shownText of a clipped output = %q, want …whole line", got)
	}
	// Its end is not shown, but the failure says why there is no text.
	if got := shownText([]byte(strings.Repeat("y", 5000)), true, nil); got != clippedLine || !utf8.ValidString(got) {
		t.Errorf("shownText of one clipped line = %q, want %q", got, clippedLine)
	}
}
