package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/plural"
)

// maxMarkerPlaces bounds the places a refused corrected payload names: a
// person fixes the first few, and the next call names the rest.
const maxMarkerPlaces = 5

// checkNoRedactionMarker refuses a corrected payload that still holds the
// redaction marker. Every view shows hidden secrets as Redacted, so a
// payload copied from a view and edited carries the marker where the
// secrets were: sent back, it would replace the real secrets with the
// marker for good (the original goes to the archive). The check looks at
// the decoded strings and keys, so an escaped marker (\u005bREDACTED])
// does not slip through.
//
// A payload that holds ShortenedMark is refused for the same reason: it
// was copied from a shortened preview, and would replace whole values with
// their starts.
func checkNoRedactionMarker(payload json.RawMessage) error {
	// Cheap for the usual payload: the markers can only be spelled with a
	// \u escape or as themselves.
	if !bytes.Contains(payload, []byte(Redacted)) && !bytes.Contains(payload, []byte(ShortenedMark)) && !bytes.Contains(payload, []byte(`\u`)) {
		return nil
	}
	places, n, err := markerPlaces(payload, ShortenedMark)
	if err != nil {
		return invalidf("the corrected payload is not valid JSON: %v", err)
	}
	if n > 0 {
		return invalidf("the corrected payload still holds the mark %s of a shortened preview in %d %s (%s), so it would send the shortened starts instead of the whole values: "+
			"give the whole payload, with every value in full, or retry without a payload to keep the stored one", ShortenedMark+"…]", n, plural.Of(n, "place", "places"), placesList(places, n))
	}
	if places, n, _ = markerPlaces(payload, Redacted); n == 0 {
		return nil
	}
	where := placesList(places, n)
	return invalidf("the corrected payload still holds the redaction marker %s in %d %s (%s), so it would send the marker instead of the hidden values: "+
		"replace the %s values with the real ones, or retry without a payload to keep the stored one", Redacted, n, plural.Of(n, "place", "places"), where, Redacted)
}

// placesList names the first places of n, and how many more there are.
func placesList(places []string, n int) string {
	where := strings.Join(places, ", ")
	if n > len(places) {
		where += fmt.Sprintf(" and %d more", n-len(places))
	}
	return where
}

// markerPlaces walks payload in document order and returns the paths
// (such as $.card.number or $.items[2]) of the first maxMarkerPlaces
// strings and keys that contain marker, and how many there are.
func markerPlaces(payload json.RawMessage, marker string) (places []string, n int, err error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	found := func(path string) {
		n++
		if len(places) < maxMarkerPlaces {
			places = append(places, path)
		}
	}
	// The decoder bounds the nesting itself, so the recursion is bounded.
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case string:
			if strings.Contains(t, marker) {
				found(path)
			}
			return nil
		case json.Delim:
			if t == '{' {
				for dec.More() {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					key, _ := k.(string)
					p := path + memberPath(key)
					if strings.Contains(key, marker) {
						found(p + " (the key)")
					}
					if err := walk(p); err != nil {
						return err
					}
				}
			} else {
				for i := 0; dec.More(); i++ {
					if err := walk(path + "[" + strconv.Itoa(i) + "]"); err != nil {
						return err
					}
				}
			}
			_, err := dec.Token() // the closing } or ]
			return err
		}
		return nil
	}
	if err := walk("$"); err != nil {
		return nil, 0, err
	}
	return places, n, nil
}

// plainKey is a key a path writes after a dot.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// memberPath is the step of a path into an object's member key: .key, or
// ["key"] when the key is not a plain name.
func memberPath(key string) string {
	if plainKey.MatchString(key) {
		return "." + key
	}
	if r := []rune(key); len(r) > 40 {
		key = string(r[:40]) + "…"
	}
	return "[" + strconv.Quote(key) + "]"
}

// jsonProblem says what is wrong with raw, which is not valid JSON, and
// where, by line and column: a person correcting a payload in an editor
// finds the place that way. It is "" when the decoder gives no position.
func jsonProblem(raw []byte) string {
	var v any
	var syn *json.SyntaxError
	if err := json.Unmarshal(raw, &v); !errors.As(err, &syn) {
		return ""
	}
	at := min(max(int(syn.Offset)-1, 0), len(raw))
	line := 1 + bytes.Count(raw[:at], []byte("\n"))
	col := 1 + utf8.RuneCount(raw[bytes.LastIndexByte(raw[:at], '\n')+1:at])
	return fmt.Sprintf(" (%s, at line %d, column %d)", syn.Error(), line, col)
}
