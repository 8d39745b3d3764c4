package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// Headers the engine reads or writes on messages.
const (
	HeaderKind            = "pgbus_kind"
	HeaderIdempotencyKey  = "pgbus_idempotency_key"
	HeaderDeadline        = "pgbus_deadline"
	HeaderDLQRetries      = "pgbus_dlq_retries"
	HeaderDeadLetter      = "pgbus_dead_letter"
	HeaderOriginalHeaders = "pgbus_original_headers"
	HeaderDiscarded       = "pgbus_discarded"
	HeaderPGMQGroup       = "x-pgmq-group"
	// HeaderIdempotencyKeyKept marks a pgbus_idempotency_key header that a
	// DLQ retry set to the default key the message had ("<queue>:<id>"
	// of the queue it died in), so that its job keeps its key across the
	// trip. No send wrote that key, so it holds no place among the
	// queue's keys: a send with it is a new message, as it was before.
	HeaderIdempotencyKeyKept = "pgbus_idempotency_key_kept"
	// HeaderTraceparent and HeaderTracestate carry the W3C trace context
	// of the trace a message belongs to, when tracing is on.
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
	// HeaderBreakerHold marks a message that an open circuit breaker
	// snoozed: {"breaker": name, "read_ct": n}, n its read count after the
	// snooze. It holds while the message waits at that read count (a read
	// takes it off), so that a reset of the breaker runs the messages it
	// held at once (RunHeldNow) instead of at the end of their snooze.
	HeaderBreakerHold = "pgbus_breaker_hold"
	// HeaderSnoozes counts the times the message's handler snoozed it
	// (an open breaker's snoozes are not counted): a snooze uses no
	// attempt, so the read count cannot tell a handler that it has waited
	// before. A DLQ retry starts it again, as it does the attempts.
	HeaderSnoozes = "pgbus_snoozes"
)

// WrappedHeaders returns the headers a producer sent that headers, a JSON
// object, wrap: headers that were no JSON object (an array, a string),
// kept whole under HeaderOriginalHeaders beside the dead-letter block of a
// dead letter (as the Ruby gem keeps them too) or beside the mark of a
// breaker's hold that says it wraps them, and nothing else. ok is false
// for any other headers, a producer's header of that name among others
// or holding an object included.
func WrappedHeaders(headers map[string]json.RawMessage) (original json.RawMessage, ok bool) {
	original, ok = headers[HeaderOriginalHeaders]
	if !ok || len(headers) != 2 || bytes.HasPrefix(bytes.TrimSpace(original), []byte("{")) {
		return nil, false
	}
	if _, dead := headers[HeaderDeadLetter]; dead {
		return original, true
	}
	var mark struct {
		Wraps bool `json:"wraps"`
	}
	hold, held := headers[HeaderBreakerHold]
	if !held || json.Unmarshal(hold, &mark) != nil || !mark.Wraps {
		return nil, false
	}
	return original, true
}

// Dead-letter reasons, the block's "reason" key.
const (
	ReasonMaxRetriesExceeded = "max_retries_exceeded"
	ReasonNonRetryable       = "non_retryable_error"
	ReasonDeadlineExceeded   = "deadline_exceeded"
)

// ReasonNotRecorded is no block's reason but a filter's: it selects the
// dead messages whose reason is not recorded, those without a block (a
// Ruby pgbus DLQ row from before the block, or one another client wrote).
const ReasonNotRecorded = "not_recorded"

// Limits of what the dead-letter block and the failure history keep.
const (
	BlockErrorMessageMax   = 1000
	BlockBacktraceMaxLines = 10
	BlockBacktraceMax      = 2000
	HistoryErrorMessageMax = 64 << 10
	HistoryBacktraceMax    = 32 << 10
)

// ParseDeadline reads the value of a pgbus_deadline header, an RFC 3339
// time, into UTC, as every time is shown, whatever offset its sender
// wrote it with; ok is false for "" and for a value that is no such time,
// which workers take as no deadline. The forms RFC 3339 lets other
// clients write are read too: "t" and "z" in lower case, a space between
// date and time, and an offset in hours alone (as PostgreSQL writes a
// timestamptz as text: 2026-12-05 18:00:00+00).
func ParseDeadline(s string) (at time.Time, ok bool) {
	if len(s) > 10 && (s[10] == ' ' || s[10] == 't') {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	if n := len(s); n > 19 && (s[n-3] == '+' || s[n-3] == '-') {
		s += ":00" // an offset in hours alone: +00
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	return at.UTC(), err == nil && s != ""
}
