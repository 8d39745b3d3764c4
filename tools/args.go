package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/ops"
)

// Bounds on what a call may pass, checked before the engine sees anything.
const (
	// maxArgumentsBytes bounds one call's arguments as JSON.
	maxArgumentsBytes = 512 << 10
	// maxStringBytes bounds each string argument (filters, names, cursors).
	maxStringBytes = 10 << 10

	defaultPageSize = ops.DefaultPageSize
	maxPageSize     = ops.MaxPageSize
)

// callError is an error the caller can fix; its message says how.
type callError struct {
	msg string
	// next are the tools its message names, as the error's next steps.
	next []ops.Hint
	// operator are steps for an operator to take on the command line,
	// whatever tools the server has: the text names them after msg, and
	// the error's next steps carry them as commands.
	operator []ops.Hint
}

func (e *callError) Error() string { return e.msg }

func fixf(format string, args ...any) error {
	return &callError{msg: fmt.Sprintf(format, args...)}
}

// fixNext is fixf whose message names next, the calls that help.
func fixNext(next []ops.Hint, format string, args ...any) error {
	return &callError{msg: fmt.Sprintf(format, args...), next: next}
}

// largeArguments is the input of a tool whose arguments may carry a value
// that makes them larger than a call may pass (a corrected payload): its
// largeArguments returns, for arguments raw over maxArgumentsBytes, the
// error that says how else to pass that value, or nil when the value is
// not what makes them large.
type largeArguments interface {
	largeArguments(raw []byte) error
}

// jsonSize is the size of a JSON value, read without keeping the value.
type jsonSize int

// UnmarshalJSON records the size of b.
func (n *jsonSize) UnmarshalJSON(b []byte) error {
	*n = jsonSize(len(b))
	return nil
}

// rawArguments returns a call's arguments as JSON, "{}" when absent.
func rawArguments(req mcp.CallToolRequest) ([]byte, error) {
	var raw []byte
	switch a := req.GetRawArguments().(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fixf("arguments could not be read as JSON: %v; pass a JSON object", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return []byte("{}"), nil
	}
	return raw, nil
}

// decodeArgs reads a call's arguments into in strictly: unknown fields,
// wrong types, oversized arguments and long strings are errors that name
// the argument and say what to pass.
func decodeArgs(req mcp.CallToolRequest, in any) error {
	raw, err := rawArguments(req)
	if err != nil {
		return err
	}
	if len(raw) > maxArgumentsBytes {
		if l, ok := in.(largeArguments); ok {
			if err := l.largeArguments(raw); err != nil {
				return err
			}
		}
		return fixf("arguments are %d bytes; at most %d are allowed: pass shorter values", len(raw), maxArgumentsBytes)
	}
	if raw[0] != '{' {
		return fixf("arguments must be a JSON object such as {\"queue\": \"orders\"}%s", acceptedFields(in))
	}
	if err := sameArgumentTwice(raw); err != nil {
		return err
	}
	if raw, err = wholeNumbers(raw, reflect.TypeOf(in).Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(in); err != nil {
		return describeDecodeError(err, in)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fixf("arguments must be one JSON object, with nothing after it")
	}
	if err := checkNulls(raw, reflect.TypeOf(in).Elem()); err != nil {
		return err
	}
	if err := checkEmpty(raw, reflect.TypeOf(in).Elem()); err != nil {
		return err
	}
	return checkStrings(reflect.ValueOf(in).Elem())
}

// checkNulls refuses null for a boolean or array argument, naming it: the
// decoder reads it as false or as no array, which is not what a caller
// who sent it may mean ("dry_run": null ran a real retry). Its schema
// takes no null. A JSON argument (payload) takes any JSON, null too, and
// a null string, integer or number is the argument left out, as before.
func checkNulls(raw []byte, t reflect.Type) error {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil // decoded already: not an object of members
	}
	for name, v := range args {
		if string(bytes.TrimSpace(v)) != "null" {
			continue
		}
		ft, ok := fieldType(t, name)
		if !ok {
			continue
		}
		switch {
		case ft.Kind() == reflect.Bool:
			return fixf("argument %s must be true or false, not null: leave it out for false", name)
		case ft.Kind() == reflect.Slice && ft != reflect.TypeOf(json.RawMessage(nil)):
			return fixf("argument %s must be %s, not null: leave it out when there are none", name, jsonKind(ft))
		}
	}
	return nil
}

// checkEmpty refuses a string argument given empty or blank, naming it
// and what leaving it out means: an agent filling it from an empty
// variable would otherwise get the argument left out, which widens a
// call ("queue": "" purging every DLQ, "kind": "" retrying every kind),
// as the command line refuses a flag given an empty value. A cursor or an
// expect given empty is refused too: it is none, and leaving it out says
// so. A null is the argument left out, as before; its schema says
// minLength 1.
func checkEmpty(raw []byte, t reflect.Type) error {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil // decoded already: not an object of members
	}
	for _, given := range slices.Sorted(maps.Keys(args)) {
		v := bytes.TrimSpace(args[given])
		f, ok := fieldOf(t, given)
		if !ok || f.Type.Kind() != reflect.String || len(v) == 0 || v[0] != '"' {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) != "" {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			return fixf("argument %s is empty: give a value", name)
		}
		return fixf("argument %s is empty: give a value, or leave %s out%s", name, name, leftOut(f.Tag.Get("jsonschema_description")))
	}
	return nil
}

// leftOut is what leaving an argument out means, as its description says
// in a sentence of its own ("Omit for every DLQ."), in parentheses and
// after a space: " (for every DLQ)"; "" when it says none.
func leftOut(description string) string {
	_, after, ok := strings.Cut(description, "Omit ")
	if !ok {
		return ""
	}
	what, _, _ := strings.Cut(strings.TrimPrefix(after, "it "), ".")
	if what == "" {
		return ""
	}
	return " (" + what + ")"
}

func describeDecodeError(err error, in any) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return fixf("arguments must be a JSON object%s", acceptedFields(in))
		}
		if i := strings.LastIndex(field, "."); i >= 0 {
			field = field[i+1:] // a field of an embedded struct: DeadFilter.kind
		}
		want := jsonKind(typeErr.Type)
		got := typeErr.Value
		if ft, ok := fieldType(reflect.TypeOf(in).Elem(), field); ok && ft.Kind() == reflect.Slice && typeErr.Type.Kind() != reflect.Slice {
			// An element of an array is wrong.
			elem := article(got)
			if strings.HasPrefix(got, "number ") {
				elem = got // a number that does not fit, such as 1.5
			}
			return fixf("argument %s must be %s; an element is %s", field, jsonKind(ft), elem)
		}
		if strings.HasPrefix(got, "number ") {
			// Numbers that do not fit: negative into an unsigned, a
			// fraction or a huge value into an integer.
			return fixf("argument %s: %s is not a valid value; pass %s", field, got, want)
		}
		return fixf("argument %s must be %s, not %s", field, want, article(got))
	case errors.As(err, &syntaxErr):
		return fixf("arguments are not valid JSON (at byte %d); pass a JSON object", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return fixf("unknown argument %s%s", name, acceptedFields(in))
	}
	return fixf("arguments could not be read: %v", err)
}

func article(jsonType string) string {
	switch jsonType {
	case "array", "object", "integer":
		return "an " + jsonType
	case "bool":
		return "a boolean"
	}
	return "a " + jsonType
}

// jsonKind names the JSON a Go type expects, for messages.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "an "), "a ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}

// fieldType returns the Go type of the field with JSON name name.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	f, ok := fieldOf(t, name)
	return f.Type, ok
}

// fieldOf returns the field of struct t with JSON name name, looking into
// embedded structs.
func fieldOf(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if ef, ok := fieldOf(f.Type, name); ok {
				return ef, true
			}
			continue
		}
		// As the decoder matches them: no two arguments' names differ
		// only in case, so the first that folds to name is the one.
		if tag == name || strings.EqualFold(tag, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// sameArgumentTwice refuses arguments raw that give one argument under
// two spellings differing in case (msg_id and MSG_ID): the decoder would
// take one or the other by their order, which a rewrite of either may
// change.
func sameArgumentTwice(raw []byte) error {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return nil // the decoder says what is wrong
	}
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		folded := strings.ToLower(name)
		if other, ok := seen[folded]; ok {
			return fixf("arguments %q and %q name the same argument: give it once", other, name)
		}
		seen[folded] = name
	}
	return nil
}

// acceptedFields lists the arguments a tool takes, for messages.
func acceptedFields(in any) string {
	names := jsonFields(reflect.TypeOf(in).Elem())
	if len(names) == 0 {
		return "; this tool takes no arguments: pass {}"
	}
	return "; this tool takes: " + strings.Join(names, ", ")
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name != "" && name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	return out
}

// checkStrings rejects string arguments over maxStringBytes, naming the
// argument. Text PostgreSQL cannot take (NUL characters) is the operations
// layer's to refuse, for every front end alike.
func checkStrings(v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && fv.Kind() == reflect.Struct {
			if err := checkStrings(fv); err != nil {
				return err
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if fv.Kind() != reflect.String {
			continue
		}
		s := fv.String()
		if len(s) > maxStringBytes {
			return fixf("argument %s is %d bytes; at most %d are allowed: pass a shorter value", name, len(s), maxStringBytes)
		}
	}
	return nil
}

// pageLimit applies the default of the limit of list op, and refuses a
// limit given out of its bounds, 0 included.
func pageLimit(limit *int, op string) (int, error) {
	if limit == nil {
		return defaultPageSize, nil
	}
	return *limit, ops.CheckLimit(op, *limit)
}

func shorten(s string) string {
	if len(s) <= 60 {
		return s
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
