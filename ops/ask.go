package ops

// AskKind names what a result left out that the same call shows when
// asked otherwise.
type AskKind string

// The kinds of Ask.
const (
	// AskPayload: payloads were hidden because the call did not ask for
	// them; the server shows them when asked, secrets redacted.
	AskPayload AskKind = "payload"
	// AskSends: the audit log left sends out because the call named no
	// operation; naming send, or all, lists them.
	AskSends AskKind = "sends"
	// AskNextPage: a page lists fewer rows than asked for so that it fits
	// a response; the next page, asked with at most Limit rows, goes on.
	// With Limit 0, a page that has no size to ask for (a summary's
	// groups) left some out: its next page goes on.
	AskNextPage AskKind = "next_page"
	// AskFullHistory: identical failures in a row were folded into one
	// entry; asking for the full history lists each.
	AskFullHistory AskKind = "full_history"
	// AskOneQueue: the stats of every queue left some out so that they
	// fit a response; the stats of one queue, asked by name, show any of
	// them, and a front end without the bound lists them all.
	AskOneQueue AskKind = "one_queue"
	// AskSmallerPage: the messages of a page were shortened so that they
	// fit a response together; a page of fewer shows more of each.
	AskSmallerPage AskKind = "smaller_page"
	// AskWhole: a message was shortened further than its bounds so that
	// it fits a response; Op, where no response bound holds, shows it
	// whole.
	AskWhole AskKind = "whole"
	// AskAll: a list left some out so that it fits a response; Op, where
	// no response bound holds, lists them all.
	AskAll AskKind = "all"
	// AskMore: as AskAll, but Op lists more rather than all: it has a
	// bound of its own.
	AskMore AskKind = "more"
	// AskSameDryRun: a dry run left some of the queues its messages would
	// go back to out so that it fits a response; the same dry run where no
	// response bound holds lists them.
	AskSameDryRun AskKind = "same_dry_run"
)

// AskKinds are the kinds of Ask, for a front end to word each.
var AskKinds = []AskKind{AskPayload, AskSends, AskNextPage, AskFullHistory, AskOneQueue, AskSmallerPage, AskWhole, AskAll, AskMore, AskSameDryRun}

// Ask ties a note of a result to what its reader can ask for to see what
// the note says was left out. ops words only what was left out, in words
// every front end may show; how to ask is an argument to an agent, a flag
// to a person at a shell and a control on a page, so each front end words
// it itself (WordAsks), as it names the operations of hints.
type Ask struct {
	Kind AskKind
	// Note is the index in the result's notes of the note it belongs to.
	Note int
	// Limit is, for AskNextPage, the most rows a page can ask for and fit.
	Limit int
	// Op is, for AskWhole, AskAll and AskMore, the operation that shows
	// what was left out where no response bound holds.
	Op string
}

// WordAsks returns notes with each note an ask belongs to replaced by
// word's wording of it; a note worded "" is left out, for a front end
// whose page already says it beside what was left out. notes itself is
// not changed.
func WordAsks(notes []string, asks []Ask, word func(a Ask, note string) string) []string {
	if len(asks) == 0 {
		return notes
	}
	worded := make([]string, len(notes))
	copy(worded, notes)
	drop := map[int]bool{}
	for _, a := range asks {
		if a.Note < 0 || a.Note >= len(worded) {
			continue
		}
		worded[a.Note] = word(a, worded[a.Note])
		drop[a.Note] = worded[a.Note] == ""
	}
	out := worded[:0]
	for i, n := range worded {
		if !drop[i] {
			out = append(out, n)
		}
	}
	return out
}

// ask appends note to notes and an Ask of kind for it to asks.
func ask(notes *[]string, asks *[]Ask, kind AskKind, note string, limit int) {
	*asks = append(*asks, Ask{Kind: kind, Note: len(*notes), Limit: limit})
	*notes = append(*notes, note)
}

// askOp appends note to notes and an Ask of kind for it, whose operation
// op shows what it left out, to asks.
func askOp(notes *[]string, asks *[]Ask, kind AskKind, op, note string) {
	*asks = append(*asks, Ask{Kind: kind, Note: len(*notes), Op: op})
	*notes = append(*notes, note)
}

// WordNotes words, in place, the notes of the result out points to when
// its notes may ask for more (a page, a message, a list of queues,
// workers or circuits, health, a retry): each front end words them its
// own way. The asks are spent, so that a second call changes nothing;
// any other value is left as it is.
func WordNotes(out any, word func(a Ask, note string) string) {
	if r, ok := out.(askingResult); ok {
		notes, asks := r.notesAndAsks()
		*notes = WordAsks(*notes, *asks, word)
		*asks = nil
	}
}

// askingResult is a result whose notes may ask for more (Ask).
type askingResult interface {
	notesAndAsks() (notes *[]string, asks *[]Ask)
}

func (r *DeadMessage) notesAndAsks() (*[]string, *[]Ask)      { return &r.Notes, &r.Asks }
func (r *LiveMessages) notesAndAsks() (*[]string, *[]Ask)     { return &r.Notes, &r.Asks }
func (r *DLQList) notesAndAsks() (*[]string, *[]Ask)          { return &r.Notes, &r.Asks }
func (r *AuditPage) notesAndAsks() (*[]string, *[]Ask)        { return &r.Notes, &r.Asks }
func (r *QueueStatsResult) notesAndAsks() (*[]string, *[]Ask) { return &r.Notes, &r.Asks }
func (r *Health) notesAndAsks() (*[]string, *[]Ask)           { return &r.Notes, &r.Asks }
func (r *Workers) notesAndAsks() (*[]string, *[]Ask)          { return &r.Notes, &r.Asks }
func (r *Circuits) notesAndAsks() (*[]string, *[]Ask)         { return &r.Notes, &r.Asks }
func (r *DLQRetry) notesAndAsks() (*[]string, *[]Ask)         { return &r.Notes, &r.Asks }
func (r *DLQSummary) notesAndAsks() (*[]string, *[]Ask)       { return &r.Notes, &r.Asks }
