package ops

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// The words name runs of attempts, and how many others once there are
// too many runs to name.
func TestUnrecordedWords(t *testing.T) {
	t.Parallel()
	many := []int{}
	for a := 1; a <= 60; a += 2 {
		many = append(many, a)
	}
	for _, c := range []struct {
		attempts []int
		want     string
	}{
		{[]int{2}, "attempt 2 left no outcome: its worker stopped or lost its connection after taking the message, or another PGMQ client read it (pgmq.read)"},
		{[]int{1, 2}, "attempts 1 and 2 left no outcome: their workers stopped or lost their connections after taking the message, or other PGMQ clients read it (pgmq.read)"},
		{[]int{1, 2, 3, 5}, "attempts 1 to 3 and 5 left no outcome"},
		{[]int{1, 3, 4, 5, 6, 9}, "attempts 1, 3 to 6 and 9 left no outcome"},
		{many, "attempts 1, 3, 5, 7, 9, 11, 13, 15, 17 and 21 others left no outcome"},
		{append(slices.Clone(many[:9]), 30, 31, 32, 33), "attempts 1, 3, 5, 7, 9, 11, 13, 15, 17 and 30 to 33 left no outcome"},
	} {
		if got := unrecordedWords(c.attempts); !strings.HasPrefix(got, c.want) || !strings.Contains(got, "toward max_retries") {
			t.Errorf("unrecordedWords(%v) = %q; want it to start %q", c.attempts, got, c.want)
		}
	}
}

// Which reads count as attempts that left no outcome: those of the last
// trip without a failure, not the read that dead-lettered a message
// unrun (past its retries or its deadline), and none of a block that
// cannot tell its trips apart.
func TestUnrecordedAttempts(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	fail := func(attempt int, at time.Time) store.FailureRecord {
		return store.FailureRecord{Failure: store.Failure{Attempt: attempt, ErrorClass: "E"}, FailedAt: at}
	}
	before, after := sent.Add(-time.Minute), sent.Add(time.Minute)
	for _, c := range []struct {
		name    string
		block   store.DeadLetterBlock
		history []store.FailureRecord
		want    []int
		routed  string
	}{
		{"all recorded", store.DeadLetterBlock{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3, SourceEnqueuedAt: sent},
			[]store.FailureRecord{fail(1, after), fail(2, after), fail(3, after)}, nil, ""},
		{"first lost", store.DeadLetterBlock{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3, SourceEnqueuedAt: sent},
			[]store.FailureRecord{fail(2, after), fail(3, after)}, []int{1}, ""},
		{"earlier trip", store.DeadLetterBlock{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3, SourceEnqueuedAt: sent, RetriesFromDLQ: 1},
			[]store.FailureRecord{fail(1, before), fail(2, before), fail(3, before), fail(2, after), fail(3, after)}, []int{1}, ""},
		{"deadline after a lost claim", store.DeadLetterBlock{Reason: store.ReasonDeadlineExceeded, Attempts: 2, MaxRetries: 5, SourceEnqueuedAt: sent},
			nil, []int{1}, "(read 2, past its deadline, dead-lettered it without running it)"},
		{"deadline after a failure", store.DeadLetterBlock{Reason: store.ReasonDeadlineExceeded, Attempts: 2, MaxRetries: 5, SourceEnqueuedAt: sent},
			[]store.FailureRecord{fail(1, after), fail(2, after)}, nil, ""},
		{"non-retryable after a lost claim", store.DeadLetterBlock{Reason: store.ReasonNonRetryable, Attempts: 2, MaxRetries: 5, SourceEnqueuedAt: sent},
			[]store.FailureRecord{fail(2, after)}, []int{1}, ""},
		{"older block, retried", store.DeadLetterBlock{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3, RetriesFromDLQ: 1},
			[]store.FailureRecord{fail(3, after)}, nil, ""},
		{"older block, never retried", store.DeadLetterBlock{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3},
			[]store.FailureRecord{fail(3, after)}, []int{1, 2}, ""},
	} {
		got, n, words := unrecorded(&c.block, c.history)
		if !slices.Equal(got, c.want) || n != len(c.want) || (len(c.want) == 0) != (words == "") || !strings.HasSuffix(words, c.routed) {
			t.Errorf("%s: unrecorded %v (%d), %q; want %v, ending %q", c.name, got, n, words, c.want, c.routed)
		}
	}
	if got, n, words := unrecorded(nil, nil); got != nil || n != 0 || words != "" {
		t.Errorf("no block: %v %d %q; want nothing", got, n, words)
	}
	var lost []store.FailureRecord
	b := store.DeadLetterBlock{Reason: store.ReasonMaxRetriesExceeded, Attempts: 1001, MaxRetries: 1000, SourceEnqueuedAt: sent}
	if got, n, _ := unrecorded(&b, lost); len(got) != unrecordedListed || n != 1000 || got[0] != 1 {
		t.Errorf("a thousand lost reads: %d listed, %d counted; want %d and 1000", len(got), n, unrecordedListed)
	}
}

// A list says beside a message's attempts what of them left no outcome,
// in words every front end shows as they are: the reads that ended
// without one, and the read that dead-lettered it unrun, which its
// attempts count too (4 attempts of max_retries 3).
func TestUnrecordedLabel(t *testing.T) {
	t.Parallel()
	zero, three := 0, 3
	for _, c := range []struct {
		name string
		item store.DeadItem
		want string
	}{
		{"crashes, then past the deadline", store.DeadItem{Reason: store.ReasonDeadlineExceeded, Attempts: 4, MaxRetries: 3, RecordedAttempts: &zero},
			"3 reads ended without an outcome (a crash or lost claim); read 4 dead-lettered it unrun, past its deadline"},
		{"failures, then past max_retries", store.DeadItem{Reason: store.ReasonMaxRetriesExceeded, Attempts: 4, MaxRetries: 3, RecordedAttempts: &three, ErrorClass: "E", ErrorAttempt: 3},
			"read 4 dead-lettered it unrun, past max_retries"},
		{"one crash", store.DeadItem{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3, RecordedAttempts: &[]int{2}[0], ErrorClass: "E", ErrorAttempt: 3},
			"1 read ended without an outcome (a crash or lost claim)"},
		{"all recorded", store.DeadItem{Reason: store.ReasonMaxRetriesExceeded, Attempts: 3, MaxRetries: 3, RecordedAttempts: &three, ErrorClass: "E", ErrorAttempt: 3}, ""},
		{"an older block", store.DeadItem{Reason: store.ReasonDeadlineExceeded, Attempts: 4, MaxRetries: 3}, ""},
	} {
		count, routed := unrecordedCount(c.item)
		if got := unrecordedLabel(count, routed, c.item.Reason); got != c.want {
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}
