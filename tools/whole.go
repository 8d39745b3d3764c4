package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// hugeExponent bounds the exponents worked out digit by digit: past it a
// number is, whatever its mantissa in arguments of at most
// maxArgumentsBytes, too large for any integer, or a fraction.
const hugeExponent = 1 << 20

// wholeNumbers returns the arguments raw with every number given for an
// integer argument, or as an element of an array of integers, that is
// whole but written with a fraction or an exponent (5.0, 5e0, 1.2e3) as
// the integer it is: JSON Schema counts it an integer, and clients that
// write every number as a float send them so. A whole number out of the
// argument's range is refused, saying so and what its bound is. Any other
// value stays as written, for the decoder to take or refuse (1.5, "5"),
// and raw is returned as it is when no number was rewritten. t is the
// struct the arguments decode into; a JSON argument (payload) is never
// looked into.
func wholeNumbers(raw []byte, t reflect.Type) ([]byte, error) {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return raw, nil // the decoder says what is wrong
	}
	changed := false
	for name, v := range args {
		f, ok := fieldOf(t, name)
		if !ok {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case isInteger(ft):
			text, ok, err := wholeNumber(v, ft, f)
			if err != nil {
				return nil, fixf("argument %s: %s", name, err)
			}
			if ok {
				args[name], changed = json.RawMessage(text), true
			}
		case ft.Kind() == reflect.Slice && ft != rawMessageType && ft.Elem().Kind() != reflect.Uint8 && isInteger(ft.Elem()):
			var elems []json.RawMessage
			if json.Unmarshal(v, &elems) != nil {
				continue // not an array: the decoder says so
			}
			rewrote := false
			for i, el := range elems {
				text, ok, err := wholeNumber(el, ft.Elem(), f)
				if err != nil {
					return nil, fixf("argument %s: element %s", name, err)
				}
				if ok {
					elems[i], rewrote = json.RawMessage(text), true
				}
			}
			if rewrote {
				b, err := json.Marshal(elems)
				if err != nil {
					return raw, nil
				}
				args[name], changed = b, true
			}
		}
	}
	if !changed {
		return raw, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the other arguments as they came
	if err := enc.Encode(args); err != nil {
		return raw, nil
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// outOfRange is a whole number an integer argument cannot hold.
type outOfRange struct{ msg string }

func (e *outOfRange) Error() string { return e.msg }

// wholeNumber reads v, a JSON value given for an integer of type t (the
// field f's), and returns the integer it is as text, and true, when it is
// a number written otherwise (5.0 as 5); false when it is no number, an
// integer written as one, or not whole. A whole number t cannot hold is an
// error saying the bound it passes: the schema's maximum or minimum where
// f has one, else t's.
func wholeNumber(v json.RawMessage, t reflect.Type, f reflect.StructField) (string, bool, error) {
	lit := string(bytes.TrimSpace(v))
	s := lit
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return "", false, nil
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ReplaceAll(s, "E", "e"), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp := int64(0)
	if hasExp {
		e, err := strconv.ParseInt(expText, 10, 64)
		switch {
		case err != nil && !strings.HasPrefix(expText, "-"), err == nil && e > hugeExponent:
			e = hugeExponent + 1
		case err != nil, e < -hugeExponent:
			e = -hugeExponent - 1
		}
		exp = e
	}
	if digits == "" {
		return "0", lit != "0", nil // 0.0, -0, 0e5
	}
	exp -= int64(len(frac))
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		return "", false, nil // a fraction: the decoder refuses it
	}
	text := ""
	if exp+int64(len(digits)) <= 20 {
		text = digits + strings.Repeat("0", int(exp))
		if neg {
			text = "-" + text
		}
		var err error
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
			_, err = strconv.ParseUint(text, 10, t.Bits())
		} else {
			_, err = strconv.ParseInt(text, 10, t.Bits())
		}
		if err == nil {
			return text, text != lit, nil
		}
	}
	return "", false, &outOfRange{msg: shorten(lit) + " is out of range; pass " + bound(t, f, neg)}
}

// bound is what to pass instead of a number out of the range of t in the
// direction neg says: the schema's own bound of field f where it sets one.
func bound(t reflect.Type, f reflect.StructField, neg bool) string {
	what := "an integer"
	if f.Type.Kind() == reflect.Slice {
		what = "integers"
	}
	key, limit := "maximum", ""
	if neg {
		key = "minimum"
	}
	for _, kv := range strings.Split(f.Tag.Get("jsonschema"), ",") {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			limit = val
		}
	}
	unsigned := t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64
	switch {
	case limit != "":
	case unsigned && neg:
		limit = "0"
	case unsigned:
		limit = strconv.FormatUint(math.MaxUint64>>(64-t.Bits()), 10)
	case neg:
		limit = strconv.FormatInt(math.MinInt64>>(64-t.Bits()), 10)
	default:
		limit = strconv.FormatInt(math.MaxInt64>>(64-t.Bits()), 10)
	}
	if neg {
		return what + " of at least " + limit
	}
	return what + " of at most " + limit
}
