package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/pgbus/pgbus/store"
)

// Operation names: what a Hint points at and what the audit log records.
// Front ends map each to their own vocabulary (a CLI command, an MCP tool,
// a page).
const (
	OpHealth        = "health"
	OpQueueStats    = "queue_stats"
	OpQueueMessages = "queue_messages"
	OpQueueCreate   = "queue_create"
	OpQueueDrop     = "queue_drop"
	OpQueuePurge    = "queue_purge"
	OpQueuePause    = "queue_pause"
	OpQueueResume   = "queue_resume"
	OpQueueRunNow   = "queue_run_now"
	OpSend          = "send"
	OpDLQSummary    = "dlq_summary"
	OpDLQList       = "dlq_list"
	OpDLQShow       = "dlq_show"
	OpDLQRetry      = "dlq_retry"
	OpDLQDiscard    = "dlq_discard"
	OpDLQPurge      = "dlq_purge"
	OpDLQDiscarded  = "dlq_discarded"
	OpDLQRestore    = "dlq_restore"
	OpWorkers       = "workers"
	OpCircuits      = "circuits"
	OpCircuitReset  = "circuit_reset"
	OpCircuitOpen   = "circuit_open"
	OpAudit         = "audit"
	// OpMigrate and OpWork have no request type here: they are how the
	// schema is created and how workers are started.
	OpMigrate = "migrate"
	OpWork    = "work"
)

// MigrateInstallPGMQ is the argument of an OpMigrate hint that installs
// PGMQ from its SQL script before migrating (Store.InstallPGMQ): its value
// stands for the script's path, which the person gives.
const MigrateInstallPGMQ = "install_pgmq"

// WorkNeedsHandler is the argument of an OpWork hint for a queue whose
// handler nobody configured: set, the step is a template in which a
// handler type is still to be chosen, since a worker without one refuses
// to start.
const WorkNeedsHandler = "needs_handler"

// Hint is a next step: the operation to call and its arguments, named as
// in the requests (queue, msg_id, ids, error_class, ...). Why says what it
// is for, in words that name no front end.
type Hint struct {
	Op   string         `json:"op" jsonschema_description:"What to call next: a tool (pgbus_dlq_list, pgbus_dlq_show, ...), or cli with args.command for what only an operator can run."`
	Args map[string]any `json:"args,omitempty" jsonschema_description:"Its arguments, by request field name."`
	Why  string         `json:"why,omitempty" jsonschema_description:"What it is for."`
}

func hint(op, why string, kv ...any) Hint {
	h := Hint{Op: op, Why: why}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if isZero(v) {
			continue
		}
		if h.Args == nil {
			h.Args = map[string]any{}
		}
		h.Args[kv[i].(string)] = v
	}
	return h
}

// uniqueHints is next with each step once: a step of the same operation
// and arguments as one before it is left out, its why added to that one's,
// which keeps its place.
func uniqueHints(next []Hint) []Hint {
	out := next[:0:0]
	at := map[string]int{}
	for _, h := range next {
		args, err := json.Marshal(h.Args) // map keys sorted
		if err != nil {
			out = append(out, h)
			continue
		}
		key := h.Op + "\x00" + string(args)
		if i, ok := at[key]; ok {
			if h.Why != "" && !strings.Contains(out[i].Why, h.Why) {
				out[i].Why = strings.TrimPrefix(out[i].Why+"; "+h.Why, "; ")
			}
			continue
		}
		at[key] = len(out)
		out = append(out, h)
	}
	return out
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case int64:
		return x == 0
	case int:
		return x == 0
	case float64:
		return x == 0
	case []int64:
		return len(x) == 0
	case bool:
		return !x
	}
	return false
}

// Error is an error of an operation: a message that says what is wrong in
// plain words, the kind it wraps (ErrInvalid, ErrNotFound, ErrReadOnly or a
// database error), and the next steps that help. Front ends print Msg and
// render Hints in their own vocabulary.
type Error struct {
	Msg   string
	Hints []Hint
	Err   error
	// Field is the request field at fault (kind, error_class, cursor), when
	// one is and the message starts with its name, so that a front end can
	// name it in its own words (a CLI flag); "" otherwise.
	Field string
	// Names are the request fields the message names as words of its own
	// (expect and dry_run in "drop expect, or dry_run"), beyond Field at
	// its start, so that a front end can name them in its own words too
	// (NameFields); nil when it names none.
	Names []string
	// dlq is the DLQ named where a queue is taken (checkWorkQueue), whose
	// next steps depend on whether it exists (Service.dlqGiven).
	dlq string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func invalidf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

func notFoundf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: ErrNotFound}
}

// NameField returns err with the request field its message starts with,
// one of fields, named as a front end names it (name(field): a flag, a form
// field), or err unchanged when it is no such error.
func NameField(err error, name func(field string) string, fields ...string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	for _, f := range fields {
		if rest, ok := strings.CutPrefix(e.Msg, f+" "); ok {
			named := *e
			named.Msg = name(f) + " " + rest
			return &named
		}
	}
	return err
}

// NameFields returns err with the request fields its message names, Field
// at its start and each of Names wherever it stands as a word outside
// quotes, named as a front end names them: name(field) and true, or false
// to leave a field as it is. Other errors pass unchanged.
func NameFields(err error, name func(field string) (string, bool)) error {
	var e *Error
	if !errors.As(err, &e) || (e.Field == "" && len(e.Names) == 0) {
		return err
	}
	head, rest := "", e.Msg
	if r, ok := strings.CutPrefix(e.Msg, e.Field+" "); ok && e.Field != "" {
		if n, ok := name(e.Field); ok {
			head, rest = n+" ", r
		}
	}
	for _, f := range e.Names {
		if n, ok := name(f); ok {
			rest = replaceWord(rest, f, n)
		}
	}
	named := *e
	named.Msg = head + rest
	named.Names = nil // named once: a second call finds nothing to name
	return &named
}

// replaceWord replaces each whole word w of s that stands outside double
// quotes (a value quoted with %q stays as given) by by.
func replaceWord(s, w, by string) string {
	word := func(b byte) bool {
		return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	var out strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\' && i+1 < len(s):
			out.WriteString(s[i : i+2])
			i++
			continue
		case s[i] == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], w) && (i == 0 || !word(s[i-1])) && (i+len(w) == len(s) || !word(s[i+len(w)])):
			out.WriteString(by)
			i += len(w) - 1
			continue
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

// naming marks fields as request fields e's words name (Names).
func (e *Error) naming(fields ...string) *Error {
	e.Names = append(e.Names, fields...)
	return e
}

func (e *Error) with(hints ...Hint) *Error {
	e.Hints = append(e.Hints, hints...)
	return e
}

// HintsOf returns the hints of err, if it is (or wraps) an *Error.
func HintsOf(err error) []Hint {
	var e *Error
	if errors.As(err, &e) {
		return e.Hints
	}
	return nil
}

// NextSteps returns what to do after err, as hints that name operations:
// those ops gave it (an *Error's hints, none when its message says what
// to do; for a bulk retry, discard or purge stopped partway, the same call
// again, after the health check when the database stopped answering; for
// a write cut off before it finished, the lists that show what it did; for
// a failure nothing explained, the health check), or, for an error from
// elsewhere (a connection a front end opened, its schema check), the
// installation of PGMQ where its tables are missing, and for one of kind
// unavailable the health check, which says when the database answers. Front ends render them in
// their own words, as they render every other hint.
func NextSteps(err error) []Hint {
	var p *PartlyDone
	var e *Error
	var s steps
	switch {
	case err == nil:
		return nil
	case errors.As(err, &p):
		return p.next()
	case errors.As(err, &e):
		return e.Hints
	case errors.As(err, &s):
		return s.hints
	case errors.Is(err, store.ErrPGMQMissing):
		// The schema check of a front end's own connection, before any
		// operation.
		return []Hint{installPGMQHint()}
	case ErrorKind(err) == KindUnavailable:
		return []Hint{healthHint()}
	}
	return nil
}

// explain gives a store or engine error of a kind the caller can act on
// (invalid input, not found) the hints that help; other errors pass
// unchanged, as do errors that already are *Error. The engine's
// "invalid input: " prefix, there for Go callers' logs, is left out: the
// message says what is wrong, and the front end how it failed.
func explain(err error, hints ...Hint) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		e := &Error{Msg: strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "), Hints: hints, Err: err}
		if store.IsCursorError(err) {
			e.Field, e.Names = "cursor", []string{"cursor"} // "cursor is not valid ...; start again without cursor"
		}
		return e
	}
	return err
}

var (
	hintType       = reflect.TypeFor[Hint]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// RewriteHints replaces every hint reachable from v (a pointer to a
// result) by what name makes of it: each front end names a next step its
// own way (a tool and its arguments, a command line). The slices and
// pointed-to values it rewrites in are copied first: rewrite a copy of a
// result (v pointing to it) and the result, and an error sharing its
// steps, keep their own.
func RewriteHints(v reflect.Value, name func(Hint) Hint) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.CanSet() {
			// A copy, as for slices below.
			c := reflect.New(v.Elem().Type())
			c.Elem().Set(v.Elem())
			v.Set(c)
		}
		RewriteHints(v.Elem(), name)
	case reflect.Interface:
		if !v.IsNil() {
			RewriteHints(v.Elem(), name)
		}
	case reflect.Struct:
		if v.Type() == hintType {
			if v.CanSet() {
				v.Set(reflect.ValueOf(name(v.Interface().(Hint))))
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				RewriteHints(v.Field(i), name)
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			return
		}
		if v.CanSet() && v.Len() > 0 {
			// A copy: the result may share its steps with an error's.
			c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(c, v)
			v.Set(c)
		}
		for i := range v.Len() {
			RewriteHints(v.Index(i), name)
		}
	}
}
