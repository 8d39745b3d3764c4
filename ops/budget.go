package ops

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/plural"
)

// ResponseBudget is the most characters the JSON of one result may have
// for an agent: every character of an answer is read, so a list that
// would pass it lists fewer rows, and a message shows less of itself, and
// both say how to get the rest.
const ResponseBudget = 16_000

// responseTarget is what ops aims for: front ends add a little when they
// name hints in their own words (pgbus_dlq_list for dlq_list), and the
// notes of a shrunk result are written after it was measured.
const responseTarget = ResponseBudget - 1_000

// jsonChars is how many characters v's JSON has.
func jsonChars(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return utf8.RuneCount(b)
}

// over reports whether v's JSON passes the response bound; never when
// there is none.
func (b Bounds) over(v any) bool {
	return b.Response > 0 && rowChars(v) > b.Response
}

// hintAllowance is what a front end may add to one hint of a row when it
// names the hint in its own words: a tool's prefix, or a command line and
// why no tool runs it.
const hintAllowance = 100

// hintedRow is a row, or a result, that carries hints of its own.
type hintedRow interface{ hintCount() int }

// rowChars is how many characters row's JSON may have once a front end
// has named its hints: a row of a list, or the rest of a result that a
// list must fit beside.
func rowChars[T any](row T) int {
	n := jsonChars(row)
	if h, ok := any(row).(hintedRow); ok {
		n += hintAllowance * h.hintCount()
	}
	return n
}

// fitRows returns how many of the first rows fit in room characters of
// JSON, at least one: a list always makes progress.
func fitRows[T any](rows []T, room int) int {
	used := 0
	for i, r := range rows {
		used += rowChars(r) + 1 // the comma
		if used > room {
			return max(i, 1)
		}
	}
	return len(rows)
}

// shrunkPage returns how many of rows fit the response bound once the
// rest of the result (rest: the result without its rows) is counted, or 0
// when all fit.
func shrunkPage[T any](b Bounds, rows []T, rest any) int {
	if b.Response <= 0 {
		return 0
	}
	if k := fitRows(rows, b.Response-rowChars(rest)); k < len(rows) {
		return k
	}
	return 0
}

// fitList leaves out the last rows of a list that would pass the response
// bound once the rest of its result (rest) is counted, and returns how
// many it left out.
func fitList[T any](b Bounds, rows *[]T, rest any) int {
	k := shrunkPage(b, *rows, rest)
	if k == 0 {
		return 0
	}
	omitted := len(*rows) - k
	*rows = (*rows)[:k]
	return omitted
}

// shrunkNote notes that a page lists fewer rows than asked for and, when
// there are more, asks for the next page with at most as many rows.
func shrunkNote(notes *[]string, asks *[]Ask, listed, asked int, more bool) {
	n := fmt.Sprintf("%d of the %d rows asked for %s listed, so that the response stays under %d characters", listed, asked, plural.Of(listed, "is", "are"), ResponseBudget)
	if !more {
		*notes = append(*notes, n)
		return
	}
	ask(notes, asks, AskNextPage, n, listed)
}

// tighter returns bounds that cut a message's view further, step by step,
// so that one message fits the response bound: fewer failures, then
// smaller payloads and headers, then shorter texts. ok is false when
// there is no tighter step.
func (b Bounds) tighter(step int) (Bounds, bool) {
	switch step {
	case 0:
		b.History, b.LiveHistory = min(b.History, 5), min(b.LiveHistory, 2)
	case 1:
		b.Payload, b.ListPayload, b.Headers = min(b.Payload, 4<<10), min(b.ListPayload, 1<<10), min(b.Headers, 2<<10)
	case 2:
		b.History, b.LiveHistory = min(b.History, 2), 1
		b.ErrorChars, b.ListErrorChars = min(b.ErrorChars, 500), min(b.ListErrorChars, 200)
		b.BacktraceLines, b.BacktraceChars, b.LiveTraceLen = min(b.BacktraceLines, 5), min(b.BacktraceChars, 500), min(b.LiveTraceLen, 3)
	case 3:
		b.Payload, b.ListPayload, b.Headers = 1<<10, 512, 1<<10
		b.History, b.ErrorChars = 1, 300
	default:
		return b, false
	}
	return b, true
}

// budgetNote says a view was cut further than its bounds to fit; its Ask
// (AskWhole) says where it shows whole.
const budgetNote = "shortened further (fewer failures, shorter payload, headers and texts) so that the response stays under 16,000 characters"

// trimMoved lists fewer of the messages a retry or discard moved when its
// result (whole, holding moved) passes the response bound; the outcome of
// every id and the counts stay, and omitted counts the ones left out.
func trimMoved[T any](b Bounds, whole any, moved *[]T, omitted *int) {
	if !b.over(whole) || len(*moved) == 0 {
		return
	}
	room := b.Response - (rowChars(whole) - jsonChars(*moved))
	k := 0
	if room > 0 {
		k = fitRows(*moved, room)
		if jsonChars((*moved)[:k]) > room {
			k = 0
		}
	}
	*omitted += len(*moved) - k
	*moved = (*moved)[:k]
}
