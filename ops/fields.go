package ops

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/store"
)

// MaxSafeFields bounds the safe payload fields of a server.
const MaxSafeFields = 50

// safeFieldPattern is the grammar of a safe field: keys joined by dots.
// Keys are plain names (letters, digits, _ and -) so that a dot always
// separates two of them; a digit-only key indexes an array.
var safeFieldPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// PayloadPolicy is what a server shows of message payloads.
type PayloadPolicy struct {
	PayloadsAllowed bool     `json:"payloads_allowed" jsonschema_description:"Whether message payloads are returned (redacted) when a call asks for them with include_payload; an operator allows them when starting the server."`
	SafeFields      []string `json:"safe_fields" jsonschema_description:"Payload fields (keys joined by dots) whose values are shown even when payloads are hidden: in a dead message's safe_fields, and as by_field of the dead-letter summary. Empty when the operator named none."`
}

// PayloadPolicy reports whether payloads are shown and which fields are
// safe to show without them. A nil Service shows neither.
func (s *Service) PayloadPolicy() PayloadPolicy {
	if s == nil {
		return PayloadPolicy{SafeFields: []string{}}
	}
	return PayloadPolicy{PayloadsAllowed: s.opts.AllowPayloads, SafeFields: append([]string{}, s.opts.SafeFields...)}
}

// CheckSafeFields validates safe payload fields as Options.SafeFields
// takes them, naming what is wrong, so that a front end can refuse them
// before it opens anything.
func CheckSafeFields(fields []string) error {
	if len(fields) > MaxSafeFields {
		return invalidf("%d safe fields; at most %d are allowed: name only the fields worth breaking failures down by", len(fields), MaxSafeFields)
	}
	for _, f := range fields {
		f = strings.TrimSpace(f) // "tenant, plan" is meant as two fields
		if !safeFieldPattern.MatchString(f) || strings.Count(f, ".") >= store.MaxFieldPathDepth {
			return invalidf("safe field %q cannot be used: name payload keys joined by dots, such as tenant or file.type (letters, digits, _ and -; at most %d keys)", clip(f, 60), store.MaxFieldPathDepth)
		}
	}
	return nil
}

// secretField reports whether a key of field is named like a secret: its
// values are hidden even though an operator called the field safe.
func secretField(field string) bool {
	return slices.ContainsFunc(strings.Split(field, "."), IsSecretKey)
}

// fieldText redacts one value of a safe field, counting what it hid.
func (v *viewer) fieldText(field, value string) string {
	if secretField(field) {
		v.redacted++
		return Redacted
	}
	return v.text(value, store.MaxFieldValueChars)
}

// fieldValues are the values of the safe fields found in a payload, as
// stored, in the order of the fields asked for.
type fieldValues struct {
	fields, values []string
}

// fieldReadChars is how much of a safe field's value is read: the characters
// a view shows (fieldText) and the margin it redacts past them, and one
// more, by which it knows the value was longer.
const fieldReadChars = store.MaxFieldValueChars + redactMargin + 1

// readFields are the values of the safe fields the store read from a
// payload: a string as it is, any other value as JSON written plainly, as
// PostgreSQL's #>> shows numbers; an object or array too large to read
// whole as the database wrote its start.
func readFields(read []store.FieldRead) *fieldValues {
	out := &fieldValues{}
	for _, f := range read {
		val := f.Value
		if f.JSON {
			if doc, ok := redact.Decode(json.RawMessage(val)); ok {
				val = string(marshalPlain(doc))
			}
		}
		out.fields, out.values = append(out.fields, f.Field), append(out.values, val)
	}
	return out
}

// shownFields returns the values fv found, redacted, by field; nil when
// there are none.
func (v *viewer) shownFields(fv *fieldValues) map[string]string {
	var out map[string]string
	for i, f := range fv.fields {
		if out == nil {
			out = map[string]string{}
		}
		out[f] = v.fieldText(f, fv.values[i])
	}
	return out
}

// FieldBreakdown counts the messages of a group by the value of a safe
// payload field.
type FieldBreakdown struct {
	Field   string       `json:"field" jsonschema_description:"The safe field, as by_field named it."`
	Values  []FieldValue `json:"values" jsonschema_description:"Its most frequent values (at most 5), most frequent first, secrets redacted: one value holding every message means the failures share it."`
	Other   int64        `json:"other" jsonschema_description:"Messages with a value not listed."`
	Missing int64        `json:"missing" jsonschema_description:"Messages whose payload lacks the field."`
}

// FieldValue is one value of a field and the messages that have it.
type FieldValue struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// breakdown redacts a store breakdown; values that redact alike are merged.
func (v *viewer) breakdown(field string, b *store.FieldBreakdown) *FieldBreakdown {
	if b == nil {
		return nil
	}
	out := &FieldBreakdown{Field: field, Values: []FieldValue{}, Other: b.Other, Missing: b.Missing}
	if secretField(field) && (len(b.Values) > 0 || b.Other > 0) {
		// Every value is hidden alike, so the messages with one are one.
		n := b.Other
		for _, fv := range b.Values {
			n += fv.Count
		}
		v.redacted++
		out.Values, out.Other = []FieldValue{{Value: Redacted, Count: n}}, 0
		return out
	}
	for _, fv := range b.Values {
		val := v.fieldText(field, fv.Value)
		if i := slices.IndexFunc(out.Values, func(x FieldValue) bool { return x.Value == val }); i >= 0 {
			out.Values[i].Count += fv.Count
			continue
		}
		out.Values = append(out.Values, FieldValue{Value: val, Count: fv.Count})
	}
	return out
}

// byFieldPath checks that field is one of the safe fields and returns its
// keys.
func (s *Service) byFieldPath(field string) ([]string, error) {
	if field == "" {
		return nil, nil
	}
	if len(s.opts.SafeFields) == 0 {
		e := fieldf("by_field", "%q cannot be used, as this server names no safe payload fields; leave by_field out, or ask an operator to name safe fields when starting the server", clip(field, 60))
		e.Names = []string{"by_field"}
		return nil, e.with(hint(OpHealth, "shows the payload policy"))
	}
	if !slices.Contains(s.opts.SafeFields, field) {
		return nil, fieldf("by_field", "%q is not a safe field of this server; use one of %s", clip(field, 60), strings.Join(s.opts.SafeFields, ", "))
	}
	return strings.Split(field, "."), nil
}
