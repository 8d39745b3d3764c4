package vocab_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// Each ask of a note reads as an agent asks (a tool's argument, as the
// notes read before the operations layer left the wording to the front
// ends) and as a person at a shell asks (a flag); none is left unworded.
func TestNoteWording(t *testing.T) {
	tool := map[ops.AskKind]string{
		ops.AskPayload:     "payload hidden: ask for it with include_payload (secrets stay redacted)",
		ops.AskSends:       "N: pass tool send (or all) to see them",
		ops.AskNextPage:    "N; pass next_cursor as cursor with the same filters for the next page, with limit 7 or less",
		ops.AskFullHistory: "N; full_history lists each",
		ops.AskOneQueue:    "N; pass queue for one of the others; pgbus queues on the command line lists them all",
		ops.AskSmallerPage: "N; a smaller limit shows more of each",
	}
	for _, k := range ops.AskKinds {
		a := ops.Ask{Kind: k, Limit: 7}
		if got := vocab.ToolNote(a, "N"); got != tool[k] {
			t.Errorf("ToolNote(%s) = %q, want %q", k, got, tool[k])
		}
		if got := vocab.CommandNote(a, "N"); !strings.HasPrefix(got, "N") || !strings.Contains(got, "--") && !strings.Contains(got, "pgbus ") {
			t.Errorf("CommandNote(%s) = %q, want the note with a flag or command", k, got)
		}
	}
}
