package pgtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// DeadSpec is how a message that DeadLetter dead-letters looks and died.
type DeadSpec struct {
	Kind    string
	Reason  string // default store.ReasonMaxRetriesExceeded
	Class   string // the error class; default "E"
	Message string // the error message
	Trace   string // the backtrace
	Payload string // JSON; default {"n": i}, i the message's place in the call
	Headers string // JSON object; default {"pgbus_kind": Kind}
	// Attempt is the attempt that failed last, MaxRetries the max_retries
	// in force; both default to 5.
	Attempt, MaxRetries int
}

// DeadLetter sends one message per spec to queue and dead-letters them at
// once, by a worker, as the specs say; it returns their ids in queue's DLQ,
// in the order of specs.
func DeadLetter(tb testing.TB, st *store.Store, queue string, specs ...DeadSpec) []int64 {
	tb.Helper()
	ctx := Context(tb)
	ids := sendSpecs(tb, st, queue, specs)
	items := make([]store.DeadLetterItem, len(ids))
	for i, id := range ids {
		spec := specs[i]
		items[i] = store.DeadLetterItem{
			MsgID:      id,
			Reason:     or(spec.Reason, store.ReasonMaxRetriesExceeded),
			MaxRetries: or(spec.MaxRetries, 5),
			Failure: &store.Failure{
				Attempt: or(spec.Attempt, 5), Kind: spec.Kind, ErrorClass: or(spec.Class, "E"),
				ErrorMessage: spec.Message, Backtrace: spec.Trace,
			},
		}
	}
	moved, err := st.DeadLetterMany(ctx, queue, store.DLQName(queue), store.SourceWorker, items)
	if err != nil || len(moved) != len(ids) {
		tb.Fatalf("dead-letter %d messages of %s: %d moved, %v", len(ids), queue, len(moved), err)
	}
	dlqID := make(map[int64]int64, len(moved))
	for _, m := range moved {
		dlqID[m.SourceMsgID] = m.DLQMsgID
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = dlqID[id]
	}
	return out
}

// DeadLetterN dead-letters n messages of queue that look and died as spec
// says (with payload {"n": i} unless spec has one); it returns their ids in
// queue's DLQ.
func DeadLetterN(tb testing.TB, st *store.Store, queue string, n int, spec DeadSpec) []int64 {
	tb.Helper()
	specs := make([]DeadSpec, n)
	for i := range specs {
		specs[i] = spec
	}
	return DeadLetter(tb, st, queue, specs...)
}

// or returns v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// HandlerDiscard sends n messages to queue (a queue, or a priority level
// of one) that look as spec says and discards them at once, as a
// handler's rule does (engine.Discard): archived in queue's archive with
// the pgbus_discarded header, their failure (spec's class and message,
// attempt 1) recorded, never dead-lettered. It returns their ids in queue.
func HandlerDiscard(tb testing.TB, st *store.Store, queue string, n int, spec DeadSpec) []int64 {
	tb.Helper()
	ctx := Context(tb)
	ids := sendSpecs(tb, st, queue, slices.Repeat([]DeadSpec{spec}, n))
	items := make([]store.DiscardItem, len(ids))
	for i, id := range ids {
		items[i] = store.DiscardItem{MsgID: id, Failure: store.Failure{Attempt: 1, Kind: spec.Kind, ErrorClass: or(spec.Class, "E"), ErrorMessage: spec.Message}}
	}
	if moved, err := st.DiscardMany(ctx, queue, items); err != nil || len(moved) != len(ids) {
		tb.Fatalf("discard %d messages of %s: %d moved, %v", len(ids), queue, len(moved), err)
	}
	return ids
}

// sendSpecs sends a message to queue for each spec: its payload and
// headers, or {"n": i} and its kind.
func sendSpecs(tb testing.TB, st *store.Store, queue string, specs []DeadSpec) []int64 {
	tb.Helper()
	msgs := make([]store.NewMessage, len(specs))
	for i, spec := range specs {
		p, h := spec.Payload, spec.Headers
		if p == "" {
			p = fmt.Sprintf(`{"n": %d}`, i)
		}
		if h == "" {
			h = fmt.Sprintf(`{"pgbus_kind": %q}`, spec.Kind)
		}
		msgs[i] = store.NewMessage{Payload: json.RawMessage(p), Headers: json.RawMessage(h)}
	}
	ids, err := st.SendBatch(Context(tb), queue, msgs)
	if err != nil {
		tb.Fatalf("send to %s: %v", queue, err)
	}
	return ids
}
