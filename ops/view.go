package ops

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/store"
)

// Bounds limit what one view of a message carries, so that a response
// stays small: whole payloads up to Payload bytes (ListPayload in lists),
// headers up to Headers bytes, error messages up to ErrorChars characters
// (ListErrorChars in lists), backtraces to BacktraceLines lines and
// BacktraceChars characters, the newest History failures of a dead message
// and LiveHistory of a live one. Response bounds the JSON of a whole
// result, in characters (0: no bound): lists shrink their rows and views
// their parts to stay under it, and say so.
//
// Bounds left zero whole are DefaultBounds. Otherwise a field left zero
// takes DefaultBounds' value, except Response, whose 0 means no bound.
type Bounds struct {
	Payload, ListPayload, Headers                int
	ErrorChars, ListErrorChars                   int
	BacktraceLines, BacktraceChars, LiveTraceLen int
	History, LiveHistory                         int
	Response                                     int
}

// DefaultBounds fit a response for an agent: one message's parts at
// these bounds mostly fit ResponseBudget, and are cut further when not.
var DefaultBounds = Bounds{
	Payload: 8 << 10, ListPayload: 4 << 10, Headers: 4 << 10,
	ErrorChars: 2000, ListErrorChars: 300,
	BacktraceLines: 10, BacktraceChars: 2000, LiveTraceLen: 5,
	History: 20, LiveHistory: 3,
	Response: responseTarget,
}

// withDefaults fills the fields left zero from DefaultBounds (Response
// excepted, see Bounds) and refuses negative ones.
func (b Bounds) withDefaults() (Bounds, error) {
	if b == (Bounds{}) {
		return DefaultBounds, nil
	}
	d := DefaultBounds
	for _, f := range []struct {
		name     string
		val, def *int
	}{
		{"Payload", &b.Payload, &d.Payload}, {"ListPayload", &b.ListPayload, &d.ListPayload}, {"Headers", &b.Headers, &d.Headers},
		{"ErrorChars", &b.ErrorChars, &d.ErrorChars}, {"ListErrorChars", &b.ListErrorChars, &d.ListErrorChars},
		{"BacktraceLines", &b.BacktraceLines, &d.BacktraceLines}, {"BacktraceChars", &b.BacktraceChars, &d.BacktraceChars},
		{"LiveTraceLen", &b.LiveTraceLen, &d.LiveTraceLen}, {"History", &b.History, &d.History}, {"LiveHistory", &b.LiveHistory, &d.LiveHistory},
	} {
		switch {
		case *f.val < 0:
			return b, invalidf("Bounds.%s is %d; give a positive bound, or 0 for the default (%d)", f.name, *f.val, *f.def)
		case *f.val == 0:
			*f.val = *f.def
		}
	}
	return b, nil
}

// FullBounds keep everything the database keeps, for a person who asked
// for one message at a terminal.
var FullBounds = Bounds{
	Payload: store.MaxPayloadBytes, ListPayload: store.MaxPayloadBytes, Headers: store.MaxPayloadBytes,
	ErrorChars: store.HistoryErrorMessageMax, ListErrorChars: 300,
	BacktraceLines: 1 << 20, BacktraceChars: store.HistoryBacktraceMax, LiveTraceLen: 1 << 20,
	History: 1 << 20, LiveHistory: 1 << 20,
}

// DeadLetter is the dead-letter block of a dead message: why and when it
// died. Error text is redacted.
type DeadLetter struct {
	// The fields below are absent when the block does not hold them (a
	// block another client wrote): unknown, never a made-up 0 or "".
	Version          *int      `json:"version,omitempty" jsonschema_description:"The block's version; absent when not recorded."`
	Reason           string    `json:"reason,omitempty" jsonschema:"enum=max_retries_exceeded,enum=non_retryable_error,enum=deadline_exceeded" jsonschema_description:"Why it died; absent when not recorded."`
	Source           string    `json:"source,omitempty" jsonschema:"enum=worker,enum=consumer" jsonschema_description:"What routed it; absent when not recorded."`
	SourceQueue      string    `json:"source_queue,omitempty" jsonschema_description:"Queue the message died in (a priority sub-queue included); absent when not recorded."`
	SourceMsgID      *int64    `json:"source_msg_id,omitempty" jsonschema_description:"Its id in the source queue; absent when not recorded."`
	SourceEnqueuedAt time.Time `json:"source_enqueued_at,omitzero"`
	Attempts         *int      `json:"attempts,omitempty" jsonschema_description:"Deliveries when it was routed; absent when not recorded."`
	MaxRetries       *int      `json:"max_retries,omitempty" jsonschema_description:"The max_retries in force when it was routed; absent when not recorded."`
	DeadLetteredAt   time.Time `json:"dead_lettered_at,omitzero"`
	RetriesFromDLQ   int       `json:"retries_from_dlq,omitempty" jsonschema_description:"Trips out of a DLQ before this death."`
	ErrorClass       string    `json:"error_class,omitempty" jsonschema_description:"Class of the last failure recorded on this trip; absent when none was (a crash, lost claims, a deadline)."`
	ErrorMessage     string    `json:"error_message,omitempty" jsonschema_description:"Its message, secrets redacted."`
	Backtrace        string    `json:"backtrace,omitempty" jsonschema_description:"Its backtrace, shortened, secrets redacted."`
	ErrorAttempt     int       `json:"error_attempt,omitempty"`
	ErrorRecordedAt  time.Time `json:"error_recorded_at,omitzero"`
	// PreviousTripError is the last failure of an earlier trip, for a
	// message retried out of a DLQ whose last trip recorded none: the
	// error fields above are empty then.
	PreviousTripError *TripError `json:"previous_trip_error,omitempty" jsonschema_description:"For a message retried out of a DLQ whose last trip recorded no failure: the last failure of the trip before, not what ended this one."`
}

// TripError is the last recorded failure of a trip, error text redacted.
type TripError struct {
	ErrorClass      string    `json:"error_class,omitempty"`
	ErrorMessage    string    `json:"error_message,omitempty"`
	ErrorAttempt    int       `json:"error_attempt,omitempty"`
	ErrorRecordedAt time.Time `json:"error_recorded_at,omitzero"`
}

// Failure is one recorded failed attempt of a message.
type Failure struct {
	Attempt      int       `json:"attempt"`
	Kind         string    `json:"kind"`
	ErrorClass   string    `json:"error_class"`
	ErrorMessage string    `json:"error_message" jsonschema_description:"Secrets redacted; shortened when long."`
	Backtrace    string    `json:"backtrace,omitempty" jsonschema_description:"Secrets redacted; shortened when long."`
	Queue        string    `json:"queue"`
	MsgID        int64     `json:"msg_id"`
	FailedAt     time.Time `json:"failed_at"`
	// Folding: identical failures in a row are one entry.
	Repeated      int       `json:"repeated,omitempty" jsonschema_description:"This failure happened this many times in a row, identically (kind, class, message, backtrace, output): attempt and failed_at are the last time, first_attempt and first_failed_at the first. Absent for a failure that happened once; full_history lists each."`
	FirstAttempt  int       `json:"first_attempt,omitempty"`
	FirstFailedAt time.Time `json:"first_failed_at,omitzero"`
	// Attempt context; absent in failures recorded by older versions.
	ElapsedMS       *int64 `json:"elapsed_ms,omitempty" jsonschema_description:"How long the attempt ran, in milliseconds: from its handler's start until it failed."`
	TimeoutMS       int64  `json:"timeout_ms,omitempty" jsonschema_description:"For an attempt cut off by its time limit: that limit, in milliseconds (the handler's, a request's or a command's timeout). Absent when it did not time out."`
	Output          string `json:"output,omitempty" jsonschema_description:"What the downstream said: the end of a command's stderr (stdout when stderr was empty) or the start of a response body; at most 2,000 characters, secrets redacted."`
	OutputSource    string `json:"output_source,omitempty" jsonschema:"enum=stderr,enum=stdout,enum=response_body" jsonschema_description:"Where output comes from."`
	OutputTruncated bool   `json:"output_truncated,omitempty" jsonschema_description:"The output was longer: only the part shown was kept (the end of a command's output, the start of a body)."`
}

// viewer applies the payload gate, bounds and redaction of one call, and
// collects what it hid or cut for the notes.
type viewer struct {
	bounds    Bounds
	showPay   bool
	hiddenWhy string
	// askable: payloads are hidden only because the call did not ask.
	askable  bool
	redacted int
	cut      bool
	// shown reads an error text stored fitted to the database's encoding
	// in its own letters (store.Store.TextShown); nil where it is stored
	// as written.
	shown func(string) string
}

func (s *Service) viewer(asked bool) *viewer {
	return s.viewerWith(asked, s.opts.Bounds)
}

// viewerWith is viewer with bounds b, tighter than the service's when a
// result must fit the response bound.
func (s *Service) viewerWith(asked bool, b Bounds) *viewer {
	v := &viewer{bounds: b, showPay: s.opts.AllowPayloads && asked, shown: s.store.TextShown()}
	switch {
	case !s.opts.AllowPayloads:
		v.hiddenWhy = "payload hidden: this server does not show payloads (an operator can allow them); secrets would stay redacted"
	case !asked:
		// How to ask is each front end's to say (AskPayload).
		v.hiddenWhy, v.askable = "payload hidden", true
	}
	return v
}

// redactMargin is how far past its cut a text is redacted: far enough
// that a secret across the cut is still recognised as one.
const redactMargin = 256

// errorText is text of an error message pgbus stored, read in its own
// letters where the database's encoding lacks them (a LATIN1 database
// stores Cyrillic as escapes, \u0442): the escapes keep groups apart,
// and the reader gets the text. A payload's values are never stored so.
func (v *viewer) errorText(s string, chars int) string { return v.text(v.class(s), chars) }

// class is an error class pgbus stored, read in its own letters as
// errorText reads a message: a filter by it fits it again as stored.
func (v *viewer) class(s string) string {
	if v.shown == nil {
		return s
	}
	return v.shown(s)
}

// text redacts and bounds one error message. Only what can be shown is
// redacted: a 4,000-character error cut to 300 costs 556.
func (v *viewer) text(s string, chars int) string {
	s, clipped := clipRunes(s, chars+redactMargin)
	s = redactClipped(s, clipped)
	s, c := cutChars(s, chars)
	v.cut = v.cut || c || clipped
	v.countHidden(s)
	return s
}

// countHidden counts the secrets that shown error text s shows as
// Redacted: those hidden as it was shown and those hidden before it was
// stored (error text and a downstream's output are stored redacted).
func (v *viewer) countHidden(s string) { v.redacted += strings.Count(s, Redacted) }

// redactClipped redacts s, cut in its middle when clipped.
func redactClipped(s string, clipped bool) string {
	if clipped {
		s, _ = redactCutText(s)
	} else {
		s, _ = RedactText(s)
	}
	return s
}

// clipRunes returns the first n runes of s, and whether there were more.
func clipRunes(s string, n int) (string, bool) {
	for i := range s {
		if n == 0 {
			return s[:i], true
		}
		n--
	}
	return s, false
}

// listNotes says what the texts of a list lost: cut to chars, or secrets
// hidden.
func (v *viewer) listNotes(chars int) []string {
	return v.listNotesShown(chars, "showing one message")
}

// listNotesShown is listNotes for a list whose messages show elsewhere
// than by showing them as they are: shown says how.
func (v *viewer) listNotesShown(chars int, shown string) []string {
	notes := []string{}
	if v.cut {
		// Showing one message cuts too, at a bound of its own: "whole"
		// would send a reader there for a tail it does not show either.
		notes = append(notes, fmt.Sprintf("error messages are cut to %d characters; %s gives its errors up to %d", chars, shown, v.bounds.ErrorChars))
	}
	if v.redacted > 0 {
		notes = append(notes, fmt.Sprintf("%s in error messages %s shown as %s", plural.Count(v.redacted, "secret-looking value", "secret-looking values"), plural.Of(v.redacted, "is", "are"), Redacted))
	}
	return notes
}

// trace redacts and bounds one backtrace.
func (v *viewer) trace(s string, lines int) string {
	cut := false
	if parts := strings.SplitN(s, "\n", lines+1); len(parts) > lines {
		s = strings.Join(parts[:lines], "\n")
		cut = true
	}
	s, clipped := clipRunes(s, v.bounds.BacktraceChars+redactMargin)
	s = redactClipped(s, cut || clipped)
	if cut {
		s += "\n…"
	}
	cut = cut || clipped
	s, c := cutChars(s, v.bounds.BacktraceChars)
	v.cut = v.cut || cut || c
	v.countHidden(s)
	return s
}

func (v *viewer) block(b *store.DeadLetterBlock) *DeadLetter {
	if b == nil {
		return nil
	}
	return &DeadLetter{
		Version: known(b.Version, b.Missing.Version), Reason: b.Reason, Source: b.Source, SourceQueue: b.SourceQueue,
		SourceMsgID: known(b.SourceMsgID, b.Missing.SourceMsgID), SourceEnqueuedAt: b.SourceEnqueuedAt,
		Attempts: known(b.Attempts, b.Missing.Attempts), MaxRetries: known(b.MaxRetries, b.Missing.MaxRetries), DeadLetteredAt: b.DeadLetteredAt,
		RetriesFromDLQ: b.RetriesFromDLQ, ErrorClass: v.class(b.ErrorClass), ErrorMessage: v.errorText(b.ErrorMessage, v.bounds.ErrorChars),
		Backtrace: v.trace(b.Backtrace, v.bounds.BacktraceLines), ErrorAttempt: b.ErrorAttempt, ErrorRecordedAt: b.ErrorRecordedAt,
		PreviousTripError: v.tripError(b.PreviousTripError),
	}
}

// known is a number a dead-letter block holds, or nil when it is missing
// from the block: unknown, which every view shows as such, never as 0.
func known[N int | int64](n N, missing bool) *N {
	if missing {
		return nil
	}
	return &n
}

// tripError is a failure a block keeps of an earlier trip, redacted and
// bounded as the block's own error.
func (v *viewer) tripError(e *store.BlockError) *TripError {
	if e == nil {
		return nil
	}
	return &TripError{ErrorClass: v.class(e.ErrorClass), ErrorMessage: v.errorText(e.ErrorMessage, v.bounds.ErrorChars),
		ErrorAttempt: e.ErrorAttempt, ErrorRecordedAt: e.ErrorRecordedAt}
}

// history keeps the newest keep failures, oldest first, each redacted and
// bounded, and returns how many older failures it left out. Unless full,
// identical failures in a row are folded into one entry with their count
// (a message failing the same way thirty times says so once). Failures are
// put in the order they were recorded (their id), whatever order they came
// in: a message retried out of a DLQ counts its attempts from 1 again, so
// an order by attempt would interleave its trips and keep the wrong ones.
//
// Failures of two trips are never folded together, however alike: a
// retry out of a DLQ came between them. The failures of a message keep no
// mark of the retries between them, so a trip is told from the next by
// its attempts, which only grow within a trip, and by tripStart, when the
// trip of the newest failures started (the block's source_enqueued_at of
// a dead message, the enqueue time of a live one; zero when unknown),
// which also parts a new trip whose first claims were lost and whose
// attempts went on past the last trip's.
func (v *viewer) history(h []store.FailureRecord, keep, traceLines int, full bool, tripStart time.Time) ([]Failure, int) {
	h = slices.Clone(h)
	slices.SortStableFunc(h, func(a, b store.FailureRecord) int { return cmp.Compare(a.ID, b.ID) })
	type run struct {
		first, last store.FailureRecord
		n           int
	}
	runs := []run{}
	for _, f := range h {
		if i := len(runs) - 1; !full && i >= 0 && sameFailure(runs[i].last, f) && sameTrip(runs[i].last, f, tripStart) {
			runs[i].last, runs[i].n = f, runs[i].n+1
			continue
		}
		runs = append(runs, run{first: f, last: f, n: 1})
	}
	omitted := 0
	if len(runs) > keep {
		for _, r := range runs[:len(runs)-keep] {
			omitted += r.n
		}
		runs = runs[len(runs)-keep:]
	}
	out := make([]Failure, len(runs))
	for i, r := range runs {
		f := r.last
		msg := f.ErrorMessage
		if f.ErrorClass == store.PayloadReplacedClass {
			msg = v.replacedPayload(msg)
		}
		out[i] = Failure{
			Attempt: f.Attempt, Kind: shownKind(f.Kind), ErrorClass: v.class(f.ErrorClass), ErrorMessage: v.errorText(msg, v.bounds.ErrorChars),
			Backtrace: v.trace(f.Backtrace, traceLines), Queue: f.Queue, MsgID: f.MsgID, FailedAt: f.FailedAt,
		}
		if r.n > 1 {
			out[i].Repeated, out[i].FirstAttempt, out[i].FirstFailedAt = r.n, r.first.Attempt, r.first.FailedAt
		}
		v.detail(&out[i], f.Detail)
	}
	return out, omitted
}

// sameFailure reports whether two failures are the same failure again:
// how long each attempt ran may differ, what went wrong may not.
func sameFailure(a, b store.FailureRecord) bool {
	return a.Kind == b.Kind && a.ErrorClass == b.ErrorClass && a.ErrorMessage == b.ErrorMessage && a.Backtrace == b.Backtrace &&
		a.Queue == b.Queue && a.MsgID == b.MsgID && a.Detail.Output == b.Detail.Output && a.Detail.TimeoutMS == b.Detail.TimeoutMS &&
		a.ErrorClass != store.PayloadReplacedClass
}

// sameTrip reports whether failure b, recorded after a, may be of the
// same trip out of the queue as a (see history): its attempt is later,
// and tripStart, when known, does not fall between them.
func sameTrip(a, b store.FailureRecord, tripStart time.Time) bool {
	if b.Attempt <= a.Attempt {
		return false
	}
	return tripStart.IsZero() || a.FailedAt.Before(tripStart) == b.FailedAt.Before(tripStart)
}

// detail adds the context of an attempt to its failure, output redacted.
// The output was bounded when it was recorded, and says so itself.
func (v *viewer) detail(f *Failure, d store.FailureDetail) {
	if d == (store.FailureDetail{}) {
		return // recorded before pgbus kept it, or by a consumer
	}
	f.ElapsedMS, f.TimeoutMS = d.ElapsedMS, d.TimeoutMS
	out, _ := RedactText(d.Output)
	v.countHidden(out)
	f.Output, f.OutputSource, f.OutputTruncated = out, d.OutputSource, d.OutputTruncated
}

// payloadReplacedMarker starts the original payload in the history record
// of a retry with a corrected payload: it is a payload, so the payload gate
// applies to it.
const payloadReplacedMarker = "Original payload: "

func (v *viewer) replacedPayload(msg string) string {
	head, orig, found := strings.Cut(msg, payloadReplacedMarker)
	if !found {
		return msg
	}
	if !v.showPay {
		return head + payloadReplacedMarker + "[hidden: payloads are not shown]"
	}
	// The markers are counted with the rest of the error text (text).
	red, _, ok := RedactJSON(json.RawMessage(orig))
	if !ok {
		return head + payloadReplacedMarker + "[hidden: cut short in the history, so secrets in it could not be redacted]"
	}
	return head + payloadReplacedMarker + string(red)
}

// payloadView is a payload as a view shows it.
type payloadView struct {
	payload   json.RawMessage // nil unless shown whole
	preview   string
	shown     bool
	truncated bool
	// previewJSON: preview is the payload as JSON with the values that
	// did not fit shortened, not the start of its text.
	previewJSON bool
	note        string
	askable     bool // note is of a payload the call did not ask for (AskPayload)
	redacted    int  // values of the payload replaced by Redacted
}

// redactedPayload is a payload redacted, once for every view one call
// makes of it (a view cut step by step to fit the response bound makes
// several): redacting a payload of megabytes costs several times its
// size.
type redactedPayload struct {
	done bool
	ok   bool
	tree any             // the redacted payload decoded; nil for an empty one
	json json.RawMessage // its JSON
	n    int             // values it hid
}

// of returns raw redacted, the first time by redacting it.
func (r *redactedPayload) of(raw json.RawMessage) *redactedPayload {
	if r.done {
		return r
	}
	r.done = true
	if len(bytes.TrimSpace(raw)) == 0 {
		r.ok, r.json = true, raw
		return r
	}
	tree, n, ok := redact.JSONTree(raw)
	if !ok {
		return r
	}
	r.ok, r.tree, r.n = true, tree, n
	r.json = redact.AppendPlain(make([]byte, 0, len(raw)+len(raw)/16+64), tree)
	return r
}

func (v *viewer) payload(raw json.RawMessage, max int) payloadView {
	return v.payloadOnce(raw, max, &redactedPayload{})
}

// payloadOnce is payload with raw redacted in red, which other views of
// the same payload share.
func (v *viewer) payloadOnce(raw json.RawMessage, max int, red *redactedPayload) payloadView {
	if !v.showPay {
		return payloadView{note: v.hiddenWhy, askable: v.askable}
	}
	r := red.of(raw)
	if !r.ok {
		return payloadView{note: payloadHiddenNote(raw)}
	}
	n := r.n
	v.redacted += n
	if len(r.json) == 0 {
		return payloadView{payload: json.RawMessage("null"), shown: true, redacted: n}
	}
	if len(r.json) <= max {
		return payloadView{payload: r.json, shown: true, redacted: n}
	}
	// Shortened from the redacted payload: a secret is hidden whole before
	// any value is cut, so no cut shows part of one. The notes give the
	// stored payload's size, as payload_bytes does, not that of the
	// redacted JSON (written without the stored text's blanks).
	if r.tree != nil { // nil: blanks only, cut as text
		if preview, sh, ok := shortPreviewTree(r.tree, max); ok {
			return payloadView{shown: true, truncated: true, preview: preview, previewJSON: true, redacted: n,
				note: shortenedNote(len(raw), len(preview), sh)}
		}
	}
	preview := cutBytes(string(r.json), max)
	return payloadView{shown: true, truncated: true, preview: preview, redacted: n,
		note: fmt.Sprintf("payload truncated: it is %d bytes, and its keys do not fit even with its values shortened; its preview shows the first %d as text", len(raw), len(preview))}
}

// headers returns headers without the dead-letter block (shown decoded),
// secrets redacted; headers over the bound are shortened to those that
// fit, or left out, with a note and how many were not shown.
func (v *viewer) headers(raw json.RawMessage) (json.RawMessage, string, int) {
	if len(raw) == 0 {
		return nil, "", 0
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		if original, ok := store.WrappedHeaders(obj); ok {
			// Headers that were no JSON object, shown as they were sent.
			raw = original
		} else {
			delete(obj, store.HeaderDeadLetter)
			// A breaker's hold is shown as held_by; its mark is pgbus's own.
			delete(obj, store.HeaderBreakerHold)
			raw = marshalPlain(obj)
		}
	}
	red, n, ok := RedactJSON(raw)
	if !ok {
		return nil, headersHiddenNote(raw), 1
	}
	v.redacted += n
	if len(red) > v.bounds.Headers {
		part, shown, all := fitHeaders(red, v.bounds.Headers)
		if shown > 0 {
			return part, fmt.Sprintf("headers shortened: %d of the %d are shown (pgbus's own first, then by name, those that fit), as they are %d bytes in all", shown, all, len(red)), all - shown
		}
		return nil, fmt.Sprintf("headers left out: they are %d bytes", len(red)), max(all, 1)
	}
	return red, "", 0
}

// fitHeaders returns as many of the headers of red, a JSON object, as fit
// in max bytes, pgbus's own (pgbus_kind, pgbus_deadline, ...) first, then
// by name, skipping one too large for what is left; and how many it
// shows of how many.
func fitHeaders(red json.RawMessage, max int) (json.RawMessage, int, int) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(red, &obj) != nil || obj == nil {
		return nil, 0, 0
	}
	other := func(k string) int {
		if strings.HasPrefix(k, "pgbus_") {
			return 0
		}
		return 1
	}
	keys := slices.SortedFunc(maps.Keys(obj), func(a, b string) int { return cmp.Or(cmp.Compare(other(a), other(b)), strings.Compare(a, b)) })
	kept := map[string]json.RawMessage{}
	size := 2 // {}
	for _, k := range keys {
		key, _ := json.Marshal(k)
		if n := len(key) + 1 + len(obj[k]) + 1; size+n <= max {
			kept[k], size = obj[k], size+n
		}
	}
	if len(kept) == 0 {
		return nil, 0, len(obj)
	}
	return marshalPlain(kept), len(kept), len(obj)
}

// cutBytes cuts s to at most max bytes on a character boundary.
func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// cutChars cuts s to at most max characters, marking the cut with "…".
func cutChars(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	r := []rune(s)
	return string(r[:max-1]) + "…", true
}
