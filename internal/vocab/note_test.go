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
		ops.AskOneQueue:    "N; pass queue for one of the others, or name_contains for those whose names contain a part (a tenant's prefix); pgbus queues on the command line lists them all",
		ops.AskSmallerPage: "N; a smaller limit shows more of each",
		ops.AskWhole:       "N; pgbus dlq show on the command line shows a message whole",
		ops.AskAll:         "N; pgbus dlq show on the command line lists them all",
		ops.AskMore:        "N; pgbus dlq show on the command line lists more",
		ops.AskSameDryRun:  "N; the same dry run on the command line (pgbus dlq retry-all --dry-run, with the same filters, or --all for none) lists those no running worker serves",
	}
	// The CLI asks without the response bound: what a response left out
	// to fit one, it shows already.
	unbounded := map[ops.AskKind]bool{ops.AskWhole: true, ops.AskAll: true, ops.AskMore: true, ops.AskSameDryRun: true}
	for _, k := range ops.AskKinds {
		a := ops.Ask{Kind: k, Limit: 7, Op: ops.OpDLQShow}
		if got := vocab.ToolNote(a, "N"); got != tool[k] {
			t.Errorf("ToolNote(%s) = %q, want %q", k, got, tool[k])
		}
		got := vocab.CommandNote(a, "N")
		if unbounded[k] {
			if got != "N" {
				t.Errorf("CommandNote(%s) = %q, want the note alone", k, got)
			}
			continue
		}
		if !strings.HasPrefix(got, "N") || !strings.Contains(got, "--") && !strings.Contains(got, "pgbus ") {
			t.Errorf("CommandNote(%s) = %q, want the note with a flag or command", k, got)
		}
	}
}

// The next page of a list that has no page size to ask for (a summary's
// groups) is asked by its cursor alone.
func TestNextPageWithoutLimit(t *testing.T) {
	a := ops.Ask{Kind: ops.AskNextPage}
	if got, want := vocab.ToolNote(a, "N"), "N; pass next_cursor as cursor with the same filters for the next page"; got != want {
		t.Errorf("ToolNote = %q, want %q", got, want)
	}
	if got, want := vocab.CommandNote(a, "N"), "N; the next page is asked with --cursor"; got != want {
		t.Errorf("CommandNote = %q, want %q", got, want)
	}
}
