package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A message of several lines too long for its cell (a command's exit code,
// then what it printed) shows the start of its first line and its last
// line, which says what went wrong; one that fits, or of one line, is
// clipped at its end as before.
func TestMessageCell(t *testing.T) {
	t.Parallel()
	exit := "exec /opt/jobs/charge.sh: exit code 3; stderr (last lines of 52 bytes):\nloading config\nfatal: card 4242 declined by the issuer"
	got := messageCell(exit, 70)
	if !strings.HasPrefix(got, "exec /opt/jobs/charge.sh") || !strings.HasSuffix(got, "declined by the issuer") || utf8.RuneCountInString(got) > 70 {
		t.Errorf("messageCell(exit output, 70) = %q (%d characters); want the command's start and the last line, within 70", got, utf8.RuneCountInString(got))
	}
	for _, s := range []string{"short\nmessage", strings.Repeat("x", 200), "a\n\n" + strings.Repeat("y", 200)} {
		if got, want := messageCell(s, 70), clip(s, 70); strings.Count(s, "\n") < 2 && got != want {
			t.Errorf("messageCell(%.20q, 70) = %q; want it clipped: %q", s, got, want)
		}
		if got := messageCell(s, 70); utf8.RuneCountInString(got) > 70 {
			t.Errorf("messageCell(%.20q, 70) is %d characters", s, utf8.RuneCountInString(got))
		}
	}
}
