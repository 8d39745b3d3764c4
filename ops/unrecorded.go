package ops

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// unrecordedListed bounds the attempts a view lists in
// DeadMessage.UnrecordedAttempts, and unrecordedSpans the runs of them its
// words name: a worker that crashed on each of hundreds of attempts must
// not push the rest of the view out of its bound.
const (
	unrecordedListed = 100
	unrecordedSpans  = 10
)

// unrecorded finds the attempts of the trip a dead message died on that
// left no outcome, and says so in words.
//
// An attempt counts when a worker's read takes the message (PGMQ's
// read_ct, which the block's attempts is), not when its job ends: a read
// that committed but whose worker never wrote a result (the reply lost
// with the connection, the worker killed or crashed before its handler
// ran or before its outcome was written) used an attempt and recorded no
// failure. The trip is the message's time in its source queue, since it
// was sent or last retried out of a DLQ (the block's source_enqueued_at):
// the failures of earlier trips, which follow the message, count their
// attempts from 1 again. The last read of a message dead-lettered
// unrun, past its retries or its deadline, is no attempt either: it is
// said apart. A block without source_enqueued_at (an older pgbus) of a
// message that was retried out of a DLQ cannot tell its trips apart, and
// reports nothing.
func unrecorded(b *store.DeadLetterBlock, history []store.FailureRecord) (attempts []int, count int, words string) {
	if b == nil || b.Attempts <= 0 || (b.SourceEnqueuedAt.IsZero() && b.RetriesFromDLQ > 0) {
		return nil, 0, ""
	}
	recorded := map[int]bool{}
	for _, f := range history {
		if f.ErrorClass == store.PayloadReplacedClass || (!b.SourceEnqueuedAt.IsZero() && f.FailedAt.Before(b.SourceEnqueuedAt)) {
			continue
		}
		recorded[f.Attempt] = true
	}
	last, routed := b.Attempts, 0
	if !recorded[last] && (b.Reason == store.ReasonMaxRetriesExceeded || b.Reason == store.ReasonDeadlineExceeded) {
		// Only a read that dead-letters a message unrun records nothing
		// of its own on these reasons.
		routed, last = last, last-1
	}
	var all []int
	for a := 1; a <= last; a++ {
		if !recorded[a] {
			all = append(all, a)
		}
	}
	if len(all) == 0 {
		return nil, 0, ""
	}
	words = unrecordedWords(all)
	if routed > 0 {
		past := "max_retries"
		if b.Reason == store.ReasonDeadlineExceeded {
			past = "its deadline"
		}
		words += fmt.Sprintf(" (read %d, past %s, dead-lettered it without running it)", routed, past)
	}
	return all[:min(len(all), unrecordedListed)], len(all), words
}

// unrecordedCount is the count of unrecorded for a list, from the facts
// of a block alone (its attempts, reason, last error's attempt and
// recorded_attempts), without the failure history: the block's error is
// the last failure of the trip, so the last attempt recorded one when it
// is that error's. routed is the read that dead-lettered it unrun, past
// max_retries or its deadline, which unrecorded says apart; 0 when none
// did. A block without recorded_attempts (an older pgbus, Ruby pgbus)
// tells nothing: 0 and 0.
func unrecordedCount(it store.DeadItem) (count, routed int) {
	if it.RecordedAttempts == nil || it.Attempts <= 0 {
		return 0, 0
	}
	last := it.Attempts
	lastRecorded := it.ErrorClass != "" && it.ErrorAttempt == it.Attempts
	if !lastRecorded && (it.Reason == store.ReasonMaxRetriesExceeded || it.Reason == store.ReasonDeadlineExceeded) {
		routed, last = last, last-1
	}
	return max(last-*it.RecordedAttempts, 0), routed
}

// unrecordedLabel says in a few words, for a list beside a message's
// attempts, what of them left no outcome: count reads that ended without
// one (a crash, a lost claim), and routed, when not 0, the read that
// dead-lettered it unrun, past max_retries or its deadline (reason); ""
// when there is neither. Every front end shows these words as they are.
func unrecordedLabel(count, routed int, reason string) string {
	var parts []string
	if count > 0 {
		parts = append(parts, plural.Count(count, "read", "reads")+" ended without an outcome (a crash or lost claim)")
	}
	if routed > 0 {
		past := "max_retries"
		if reason == store.ReasonDeadlineExceeded {
			past = "its deadline"
		}
		parts = append(parts, fmt.Sprintf("read %d dead-lettered it unrun, past %s", routed, past))
	}
	return strings.Join(parts, "; ")
}

// liveUnrecorded counts the attempts of a live message's trip (since
// enqueuedAt) that left no outcome, for a message none of whose reads
// still runs: retrying after a failure, or waiting after a read whose
// claim ran out. A message in flight, or held, counts none.
func liveUnrecorded(state string, reads int, enqueuedAt time.Time, history []store.FailureRecord) int {
	if reads <= 0 || (state != store.StateRetrying && state != store.StateWaiting) {
		return 0
	}
	recorded := map[int]bool{}
	for _, f := range history {
		if f.ErrorClass != store.PayloadReplacedClass && !f.FailedAt.Before(enqueuedAt) && f.Attempt >= 1 && f.Attempt <= reads {
			recorded[f.Attempt] = true
		}
	}
	return reads - len(recorded)
}

// unrecordedWords says which attempts left no outcome and what that
// means: runs of three or more as "1 to 3", at most unrecordedSpans runs
// and then how many others.
func unrecordedWords(attempts []int) string {
	if len(attempts) == 1 {
		return fmt.Sprintf("attempt %d left no outcome: its worker stopped or lost its connection after taking the message, or another PGMQ client read it (pgmq.read); it still counts toward max_retries", attempts[0])
	}
	var spans []string
	named := 0
	for i := 0; i < len(attempts); {
		if rest := attempts[i:]; len(spans) == unrecordedSpans-1 && rest[len(rest)-1]-rest[0] != len(rest)-1 {
			spans = append(spans, fmt.Sprintf("%d others", len(attempts)-named))
			break
		}
		j := i
		for j+1 < len(attempts) && attempts[j+1] == attempts[j]+1 {
			j++
		}
		if j-i < 2 {
			j = i // a run of two is two numbers
			spans = append(spans, fmt.Sprint(attempts[i]))
		} else {
			spans = append(spans, fmt.Sprintf("%d to %d", attempts[i], attempts[j]))
		}
		named += j - i + 1
		i = j + 1
	}
	list := spans[0]
	if n := len(spans); n > 1 {
		list = strings.Join(spans[:n-1], ", ") + " and " + spans[n-1]
	}
	return "attempts " + list + " left no outcome: their workers stopped or lost their connections after taking the message, or other PGMQ clients read it (pgmq.read); they still count toward max_retries"
}
