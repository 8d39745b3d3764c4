package ops

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/store"
)

// Defaults and bounds of requests, the same for every front end.
const (
	// DefaultPageSize and MaxPageSize bound the pages of list operations.
	DefaultPageSize = 25
	MaxPageSize     = 100
	// MaxIDs bounds the ids of one retry or discard by ids.
	MaxIDs = 100
	// DefaultBulkLimit is the limit of a retry or discard by filter that
	// gives none; MaxBulkLimit the largest it may give.
	DefaultBulkLimit = 1000
	MaxBulkLimit     = store.MaxDeadBulk
	// MaxCorrectedPayloadBytes bounds a corrected payload of a retry.
	MaxCorrectedPayloadBytes = store.MaxPayloadBytes
)

// Reasons a message is dead-lettered, as DeadFilter.Reason takes them.
var Reasons = []string{store.ReasonMaxRetriesExceeded, store.ReasonNonRetryable, store.ReasonDeadlineExceeded, ReasonNotRecorded}

// ReasonNotRecorded is the reason shown for a dead message without a
// dead-letter block: one an older Ruby pgbus dead-lettered before it wrote
// the block, or one another client put in the DLQ. Such a message is shown,
// listed and retried like any other; a retry sends it to the DLQ's queue.
// As a filter it selects those messages.
const ReasonNotRecorded = store.ReasonNotRecorded

// NotRecordedNote explains ReasonNotRecorded where a front end shows it.
const NotRecordedNote = "reason not recorded: the message has no pgbus_dead_letter block (dead-lettered by a Ruby pgbus from before the block, or put in the DLQ by another client); a retry sends it to the DLQ's queue"

// shownReason is the reason a view shows: ReasonNotRecorded for none.
func shownReason(r string) string {
	if r == "" {
		return ReasonNotRecorded
	}
	return r
}

// DeadFilter selects dead messages. Empty fields select everything. Since
// and Until take a time in one grammar for every front end (ParseTime):
// RFC 3339, a date, or an age such as 30m, 2h or 7d.
type DeadFilter struct {
	// Queue is the source queue (orders) or its DLQ (orders_dlq).
	Queue string `json:"queue,omitempty"`
	// Kind is the job kind exactly as the summary shows it.
	Kind string `json:"kind,omitempty"`
	// ErrorClass is the last failure's class, exactly.
	ErrorClass string `json:"error_class,omitempty"`
	// Reason is one of Reasons.
	Reason string `json:"reason,omitempty"`
	// Since (inclusive) and Until (exclusive) bound the dead-letter time.
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Text is case-insensitive text in the last error message, as stored:
	// with its secrets redacted.
	Text string `json:"text,omitempty"`
	// Group is a group's key as a summary gives it (DeadGroup.Group):
	// exactly that group's messages, where kind and error class select
	// every group that shares them.
	Group string `json:"group,omitempty"`
}

// IsZero reports whether the filter selects every dead message.
func (f DeadFilter) IsZero() bool { return f == DeadFilter{} }

// OnlyQueue reports whether the filter sets nothing but Queue.
func (f DeadFilter) OnlyQueue() bool { return f == DeadFilter{Queue: f.Queue} }

// given names the fields of the filter set besides Queue, as requests name
// them, in the order of DeadFilter: those a call by ids must drop.
func (f DeadFilter) given() []string {
	var names []string
	for _, kv := range [][2]string{{"kind", f.Kind}, {"error_class", f.ErrorClass}, {"reason", f.Reason},
		{"since", f.Since}, {"until", f.Until}, {"text", f.Text}, {"group", f.Group}} {
		if kv[1] != "" {
			names = append(names, kv[0])
		}
	}
	return names
}

// andList joins words for a sentence: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// relative reports whether Since or Until is an age, whose instant depends
// on when the call is made.
func (f DeadFilter) relative() bool {
	for _, s := range []string{f.Since, f.Until} {
		if s != "" && isAge(s) {
			return true
		}
	}
	return false
}

// Pinned returns f with a since or until given as an age (7d) replaced by
// the instant it stands for at now: a next step or a form that repeats a
// call's selection (a dry run's, with its expect) is used minutes later, by
// when an age selects another window, and the guard refused it as a
// change no one made. Values that are no age, or no value, stay as given.
func (f DeadFilter) Pinned(now time.Time) DeadFilter {
	for _, v := range []*string{&f.Since, &f.Until} {
		if s := strings.TrimSpace(*v); s != "" && isAge(s) {
			// As the call resolved it, to the microsecond.
			if at, err := parseField("", s, now); err == nil {
				*v = at.UTC().Format(time.RFC3339Nano)
			}
		}
	}
	return f
}

// resolve checks the filter and converts it for the store, ages counting
// back from now.
func (f DeadFilter) resolve(now time.Time) (store.DeadFilter, error) {
	if err := f.checkText(); err != nil {
		return store.DeadFilter{}, err
	}
	if err := f.checkLengths(); err != nil {
		return store.DeadFilter{}, err
	}
	out := store.DeadFilter{Queue: strings.TrimSpace(f.Queue), Kind: f.Kind, ErrorClass: f.ErrorClass, Reason: f.Reason, Text: f.Text, Group: strings.TrimSpace(f.Group)}
	if out.Queue != "" {
		if err := checkDeadQueueName(out.Queue); err != nil {
			return out, err
		}
	}
	if out.Group != "" && !store.IsGroupKey(out.Group) {
		return out, fieldf("group", "%q is not a group's key: copy the group field of a summary's group (36 characters such as 4f9a0c7e-1b2d-3e4f-8a9b-0c1d2e3f4a5b)", clip(out.Group, 60)).
			with(hint(OpDLQSummary, "lists the groups with their keys", "queue", out.Queue))
	}
	if err := checkShownKind(f.Kind, out.Queue); err != nil {
		return out, err
	}
	if f.Reason != "" && !slices.Contains(Reasons, f.Reason) {
		return out, invalidf("reason %q is unknown; use one of %s, or leave it out", clip(f.Reason, 60), strings.Join(Reasons, ", "))
	}
	var err error
	if out.Since, err = parseField("since", f.Since, now); err != nil {
		return out, err
	}
	if out.Until, err = parseField("until", f.Until, now); err != nil {
		return out, err
	}
	if !out.Since.IsZero() && !out.Until.IsZero() && !out.Until.After(out.Since) {
		return out, invalidf("until (%s) is not after the start of the range (%s): the range selects nothing", out.Until.UTC().Format(time.RFC3339), out.Since.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// shorterAdvice says what to do about a filter field over its length:
// text matches a part of the error message; a kind or an error class
// matches whole, and none is that long.
func shorterAdvice(field string) string {
	if field == "text" {
		return "pass a shorter, distinctive part"
	}
	return "it is matched whole, and no " + strings.ReplaceAll(field, "_", " ") + " is that long: copy it from the dead message or its summary's group"
}

// checkLengths refuses a kind, error class or text longer than the store
// compares, before any hint of the request repeats it: a hint of a
// refusal found later (a wrong expect) carries the filter.
func (f DeadFilter) checkLengths() error {
	for _, t := range []struct {
		name, value string
		max         int
	}{{"kind", f.Kind, store.MaxDeadFilterName}, {"error_class", f.ErrorClass, store.MaxDeadFilterName}, {"text", f.Text, store.MaxDeadFilterText}} {
		if n := utf8.RuneCountInString(t.value); n > t.max {
			e := invalidf("filter %s is %d characters; at most %d are allowed: %s", t.name, n, t.max, shorterAdvice(t.name))
			e.Field = t.name
			return e
		}
	}
	return nil
}

func parseField(name, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := ParseTime(s, now)
	var far outOfRange
	switch {
	case errors.Is(err, errNotTime):
		return time.Time{}, fieldf(name, "%q is not a time: %v", clip(s, 60), err)
	case errors.As(err, &far):
		return time.Time{}, fieldf(name, "%q is out of range: %v", clip(s, 60), err)
	case err != nil:
		// An age out of its range, which names the value itself.
		return time.Time{}, fieldf(name, "%v", err)
	}
	// PostgreSQL keeps microseconds, and a time sent to it loses the rest:
	// a bound a fraction of a microsecond after a stored time would take
	// it in as a since, and leave it out as an until. Rounded up, the
	// bound is the first stored time not before it, right for both.
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		t = r.Add(time.Microsecond)
	}
	return t, nil
}

// errNotTime is ParseTime's error for a text that is no time at all.
var errNotTime = errors.New("give an RFC 3339 time (2026-11-29T20:00:00Z), a date (2026-11-29, midnight UTC) or an age such as 30m, 2h or 7d")

// outOfRange is ParseTime's error for a time it read that lies outside
// what a bound may be.
type outOfRange struct{ error }

// ParseTime reads a point in time in the one grammar every front end
// takes: an RFC 3339 time (2026-11-29T20:00:00Z, or as RFC 3339 also
// allows with a lower-case t and z or a space for the T), a date (2026-11-29,
// midnight UTC), or an age meaning that long before now: a Go duration
// (90m, 2h30m) or whole days (7d).
//
// A time before 1970 or more than a year ahead is refused: a zero time
// would otherwise read as no bound at all.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxTimeText {
		return time.Time{}, errNotTime
	}
	t, err := time.Parse(time.RFC3339Nano, rfc3339Text(s))
	if err != nil {
		t, err = time.Parse(time.DateOnly, s)
	}
	if err != nil {
		d, aerr := ParseAge(s)
		switch {
		case errors.As(aerr, new(ageTooLong)):
			return time.Time{}, beforeEpoch(s, now)
		case aerr != nil && looksLikeAge(s):
			return time.Time{}, aerr // an age out of range: say which range
		case aerr != nil:
			return time.Time{}, errNotTime
		}
		t = now.Add(-d)
		if t.Before(time.Unix(0, 0)) {
			return time.Time{}, beforeEpoch(s, now)
		}
	}
	switch {
	case t.Before(time.Unix(0, 0)):
		return time.Time{}, outOfRange{fmt.Errorf("%s is before 1970, before anything pgbus keeps could have happened; give a later time or leave the bound out", t.UTC().Format(time.RFC3339))}
	case t.After(now.AddDate(1, 0, 0)):
		return time.Time{}, outOfRange{fmt.Errorf("%s is more than a year ahead; give an earlier time or leave the bound out", t.UTC().Format(time.RFC3339))}
	}
	return t, nil
}

// ageTooLong is ParseAge's error for an age past its hundred years.
type ageTooLong struct{ error }

// beforeEpoch is ParseTime's error for an age that reaches back before
// 1970: it names the longest age that does not, where ParseAge's own
// bound of a hundred years would be advice that still fails.
func beforeEpoch(age string, now time.Time) error {
	days := int64(now.Sub(time.Unix(0, 0)) / (24 * time.Hour))
	return outOfRange{fmt.Errorf("%q reaches back before 1970, before anything pgbus keeps could have happened; give at most %dd or leave the bound out", age, days)}
}

// rfc3339Text is s in the one spelling of RFC 3339 that Go parses, for
// the others RFC 3339 allows: a lower-case t or z, and a space between
// date and time (its §5.6 note).
func rfc3339Text(s string) string {
	if len(s) > 10 && (s[10] == 't' || s[10] == ' ') {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	return s
}

// ParseAge reads a non-negative duration: a Go duration (90m, 2h30m) or
// whole days (7d), at most 100 years.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxTimeText {
		return 0, fmt.Errorf("%q is not an age: give a duration such as 30m, 2h or 7d, at most 100 years", clip(s, 30))
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		switch {
		case err == nil && n < 0, errors.Is(err, strconv.ErrRange) && strings.HasPrefix(days, "-"):
			return 0, fmt.Errorf("%q is negative: give 0 or more days, such as 7d", s)
		case err == nil && n > int64(maxAge/(24*time.Hour)), errors.Is(err, strconv.ErrRange):
			return 0, ageTooLong{fmt.Errorf("%q is too long: give at most 36500d (100 years)", s)}
		case err != nil:
			return 0, fmt.Errorf("%q is not an age: give whole days from 0 to 36500, such as 7d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && durationShaped.MatchString(s):
		// The only error left for a duration of that shape is overflow.
		return 0, ageTooLong{fmt.Errorf("%q is too long: give at most 36500d (100 years)", s)}
	case err != nil:
		return 0, fmt.Errorf("%q is not an age: give a duration such as 30m, 2h or 7d, at most 100 years", s)
	case d < 0:
		return 0, fmt.Errorf("%q is negative: give 0 or more, such as 30m", s)
	case d > maxAge:
		return 0, ageTooLong{fmt.Errorf("%q is too long: give at most 36500d (100 years)", s)}
	}
	return d, nil
}

// IsDurationOverflow reports whether s is written as a Go duration
// (numbers, each with a unit) too long for one: time.ParseDuration says
// only that it is invalid, which reads as a typo.
func IsDurationOverflow(s string) bool {
	s = strings.TrimSpace(s)
	_, err := time.ParseDuration(s)
	return err != nil && durationShaped.MatchString(s)
}

// durationShaped matches what time.ParseDuration reads, whatever its size:
// numbers, each with a unit.
var durationShaped = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// FormatAge writes an age as ParseAge reads it and a person would: whole
// days as 7d, else the duration without its zero minutes and seconds
// (72h rather than 72h0m0s), for the next steps that repeat one and the
// errors that name a limit.
func FormatAge(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return shortDuration(d)
}

// shortDuration writes d as time.ParseDuration reads it, without its zero
// minutes and seconds (72h rather than 72h0m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// looksLikeAge reports whether s is written as an age, whole days or a Go
// duration, whatever its size; a negative one is no age at all, and gets
// the whole grammar.
func looksLikeAge(s string) bool {
	if strings.HasPrefix(s, "-") {
		return false
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		return true
	}
	return durationShaped.MatchString(s) // too long to read too
}

// maxTimeText is the longest text ParseTime and ParseAge read, blanks
// around it aside: the longest RFC 3339 time has 35 characters, and an
// age padded with zeros would otherwise be as long as the caller likes,
// for every message and next step that repeats it.
const maxTimeText = 64

// maxAge is the longest age ParseAge takes: 100 years.
const maxAge = 100 * 365 * 24 * time.Hour

func isAge(s string) bool {
	_, err := ParseAge(s)
	return err == nil
}

// pageLimit applies the default and bounds of the limit of list op.
func pageLimit(op string, limit int) (int, error) {
	if limit == 0 {
		return DefaultPageSize, nil
	}
	return limit, CheckLimit(op, limit)
}

// CheckLimit checks the page size of list op (OpDLQList, OpDLQDiscarded,
// OpQueueMessages, OpAudit) as a caller gave it: 1 to MaxPageSize. A
// request's Limit reads 0 as the default; a front end that tells a limit
// given as 0 from none refuses the 0 with this, since nobody asks for an
// empty page. The error says how to reach the rows beyond a page.
func CheckLimit(op string, limit int) error {
	if limit >= 1 && limit <= MaxPageSize {
		return nil
	}
	more := "and page with the next cursor for more"
	if op == OpDLQDiscarded {
		// Without the paging of the other lists: narrowing is the way on.
		more = "the most recently discarded first, and narrow the filters (kind, error class, since, until) for older ones"
	}
	return fieldf("limit", "%d is out of range; give 1 to %d (default %d), %s", limit, MaxPageSize, DefaultPageSize, more)
}

// bulkLimit applies the default and bounds of a retry or discard by
// filter.
func bulkLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultBulkLimit, nil
	}
	return limit, CheckBulkLimit(limit, MaxBulkLimit)
}

// CheckBulkLimit checks the most messages a retry or discard by filter
// moves, as a caller gave it: 1 to most, which a front end may set below
// MaxBulkLimit to move less in one call (a request's Limit reads 0 as
// DefaultBulkLimit).
func CheckBulkLimit(limit, most int) error {
	most = min(most, MaxBulkLimit)
	if limit >= 1 && limit <= most {
		return nil
	}
	return fieldf("limit", "%d is out of range; give 1 to %d, and call again for more", limit, most)
}

// checkIDs validates the ids of a retry or discard, dropping repeats.
func checkIDs(ids []int64) ([]int64, error) {
	if len(ids) > MaxIDs {
		return nil, invalidf("%d ids given; at most %d are allowed per call: select them with a filter and a limit instead, or split the ids", len(ids), MaxIDs)
	}
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if id <= 0 {
			return nil, invalidf("%d is not a message id; ids are positive whole numbers, as the dead-letter list shows them (msg_id)", id)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// IDForm is the one form in which a message id is written as text, as
// ParseID reads it: for the errors of the front ends that read ids from
// text (a resource URI, a page's URL or form, a command line).
const IDForm = "a positive integer written in decimal digits alone (no sign, leading zero, space or separator), such as 42"

// ParseID reads a message id written as text: digits alone, the first not
// 0, as the dead-letter list writes ids. Any other spelling of a number
// (+42, 042, " 42", 4_2, 42.0) is refused rather than read as 42, so that
// an id has one spelling wherever it is given: JSON arguments, URIs, URLs
// and command lines alike.
func ParseID(s string) (int64, error) {
	if s == "" || s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, invalidf("message id %q is not in the form expected: give %s", clip(s, 40), IDForm)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, invalidf("message id %s is too large: ids go up to %d", clip(s, 40), int64(math.MaxInt64))
	}
	return id, nil
}

// clip shortens s to n characters for a message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// baseQueue returns the queue a DLQ belongs to.
func baseQueue(dlq string) string { return strings.TrimSuffix(dlq, store.DLQSuffix) }

// Check validates the filter without the database, for a front end that
// checks its whole input before it connects.
func (f DeadFilter) Check() error {
	_, err := f.resolve(time.Now())
	return err
}
