package dashboard

import "github.com/pgbus/pgbus/ops"

// pageNote words a note whose ask (ops.WordAsks) says how to see what it
// left out, as a page asks: by the control the page shows for it.
// payload is the note of payloads not asked for, naming the page's
// control that shows them.
func pageNote(payload string) func(ops.Ask, string) string {
	return func(a ops.Ask, note string) string {
		switch a.Kind {
		case ops.AskPayload:
			return payload
		case ops.AskSends:
			// The page links the entries with sends in place of the note.
			return ""
		case ops.AskNextPage:
			return note + "; “Next page” goes on"
		case ops.AskSmallerPage:
			// Its pages have one size: there is nothing to ask.
			return note
		case ops.AskFullHistory:
			// The page shows each such entry with how many times it
			// happened alike; it has no other view of the history.
			return note + ", shown with how many times it happened alike"
		case ops.AskWhole:
			// The page has no fuller view: it says only what it cut.
			return note
		case ops.AskAll, ops.AskMore, ops.AskSameDryRun:
			// Its pages of workers and breakers ask for them all.
			return note
		}
		return note
	}
}

// sendsLeftOut reports whether a page of the audit log left sends out,
// which its page links.
func sendsLeftOut(p ops.AuditPage) bool {
	for _, a := range p.Asks {
		if a.Kind == ops.AskSends {
			return true
		}
	}
	return false
}
