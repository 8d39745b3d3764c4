package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/pgbus/pgbus/store"
)

// readCutMark stands, in the preview of a payload a list read only the
// start of, where the read stopped: it ends every object and array the
// cut left open (in an object as the value of a member "…", which shows
// even where the member before it is redacted), and takes the place of a
// value the cut went through, whose part is never shown.
const readCutMark = ShortenedMark + "the rest, not read in a list]"

// minListRead is the fewest characters of each payload a list reads: a
// payload up to it is previewed as it is when read whole.
const minListRead = 64 << 10

// listRead is how much of each payload a list with bounds b reads: a
// start well past what its preview shows, so that any payload of a usual
// size is read whole, and one of megabytes costs what is shown.
func listRead(b Bounds) int {
	n := max(minListRead, 16*b.ListPayload)
	if n >= store.MaxPayloadBytes {
		return 0 // all of it: the bounds show payloads whole
	}
	return n
}

// openContainer is an object or array that start, cut, leaves open.
type openContainer struct {
	object bool
	whole  int             // members or items read whole
	keys   map[string]bool // an object's keys, for a mark's key of its own
	key    bool            // an object's next string is a key
}

// closeStart closes start, the first characters of a payload's JSON text
// (as jsonb writes it), into JSON: all it holds whole, each container
// left open ended by readCutMark, and a member whose value was cut kept
// with readCutMark as its value. Of a string value cut in its middle
// only a start shows (cutValue), of at most keep characters, more than a
// preview of keep bytes shows of it; of a key or another value, nothing.
// ok is false when start is no start of JSON.
func closeStart(start []byte, keep int) (closed json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(start))
	dec.UseNumber()
	var open []*openContainer
	end, keyEnd := 0, -1 // after the last whole value, after a key whose value is not
	valueDone := func(off int) bool {
		end, keyEnd = off, -1
		if len(open) == 0 {
			return true
		}
		top := open[len(open)-1]
		top.whole++
		top.key = top.object
		return false
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		off := int(dec.InputOffset())
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				open = append(open, &openContainer{object: t == '{', key: t == '{'})
				end, keyEnd = off, -1
			default:
				if len(open) == 0 {
					return nil, false
				}
				open = open[:len(open)-1]
				if valueDone(off) {
					return start[:off], true
				}
			}
		case string:
			if top := len(open) - 1; top >= 0 && open[top].key {
				if open[top].keys == nil {
					open[top].keys = map[string]bool{}
				}
				open[top].keys[t], open[top].key, keyEnd = true, false, off
				continue
			}
			if valueDone(off) {
				return start[:off], true
			}
		case json.Number:
			// A number that ends the start may have been cut.
			if off < len(start) && valueDone(off) {
				return start[:off], true
			}
		default: // true, false, null: read whole or not at all
			if valueDone(off) {
				return start[:off], true
			}
		}
	}
	mark, _ := json.Marshal(readCutMark)
	if len(open) == 0 {
		if end > 0 {
			return nil, false // a whole value, then more than blanks
		}
		return cutValue(start, 0, keep), true // a scalar cut in its middle
	}
	var b bytes.Buffer
	switch top := open[len(open)-1]; {
	case keyEnd >= 0:
		b.Write(start[:keyEnd])
		b.WriteString(": ")
		b.Write(cutValue(start, keyEnd, keep))
	case !top.object:
		b.Write(start[:end])
		if v := cutValue(start, end, keep); !bytes.Equal(v, mark) {
			if top.whole > 0 {
				b.WriteString(", ")
			}
			b.Write(v)
			top.whole++
		}
	default: // a key cut, or none
		b.Write(start[:end])
	}
	for i := len(open) - 1; i >= 0; i-- {
		c := open[i]
		if c.whole > 0 || i < len(open)-1 || i == len(open)-1 && keyEnd >= 0 {
			b.WriteString(", ")
		}
		if c.object {
			key := "…"
			for c.keys[key] {
				key += "…"
			}
			k, _ := json.Marshal(key)
			b.Write(k)
			b.WriteString(": ")
		}
		b.Write(mark)
		if c.object {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.Bytes(), true
}

// cutValue is the value the cut went through, which begins in start
// after at: a string's start, redacted, at most keep characters and without its last
// redactMargin characters (so that a secret across the cut is recognised
// as one, or not shown), followed by readCutMark; readCutMark alone for
// any other value, or a string too short to keep any of.
func cutValue(start []byte, at, keep int) json.RawMessage {
	mark, _ := json.Marshal(readCutMark)
	rest := bytes.TrimLeft(start[at:], " \t\r\n:,")
	if len(rest) == 0 || rest[0] != '"' {
		return mark
	}
	body := rest[1:]
	// Leave out an escape the cut went through.
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 >= len(body) || body[i+1] == 'u' && i+6 > len(body) {
			body = body[:i]
			break
		}
		i++
	}
	var str string
	if json.Unmarshal(append(append([]byte{'"'}, body...), '"'), &str) != nil {
		return mark
	}
	str, _ = redactCutText(str)
	n := min(utf8.RuneCountInString(str)-redactMargin, keep)
	if n <= 0 {
		return mark
	}
	str, _ = clipRunes(str, n)
	return marshalPlain(str + readCutMark)
}

// cutPayload is payload for the start of a payload of size bytes that a
// list read only that start of: a preview of the start, closed as JSON
// and redacted there (redactJSONCut: what the cut may have taken
// from its containers does not let a secret through), never the
// payload whole.
func (v *viewer) cutPayload(start json.RawMessage, size, max int) payloadView {
	if !v.showPay {
		return payloadView{note: v.hiddenWhy, askable: v.askable}
	}
	closed, ok := closeStart(start, max)
	var red json.RawMessage
	var n int
	if ok {
		red, n, ok = redactJSONCut(closed, readCutMark)
	}
	if !ok {
		return payloadView{note: payloadHiddenNote(start)}
	}
	v.redacted += n
	read := fmt.Sprintf("payload truncated: it is %d bytes, of which a list reads the first %d characters", size, utf8.RuneCount(start))
	if len(red) <= max {
		return payloadView{shown: true, truncated: true, preview: string(red), previewJSON: true, redacted: n,
			note: fmt.Sprintf("%s; its preview shows them as JSON, where the read stopped marked %s", read, readCutMark)}
	}
	if preview, sh, ok := shortPreview(red, max); ok {
		return payloadView{shown: true, truncated: true, preview: preview, previewJSON: true, redacted: n,
			note: fmt.Sprintf("%s; its preview shows them as JSON of %d bytes, where the read stopped marked %s, with %s", read, len(preview), readCutMark, shortenedWhere(sh))}
	}
	preview := cutBytes(string(red), max)
	return payloadView{shown: true, truncated: true, preview: preview, redacted: n,
		note: fmt.Sprintf("%s, and their keys do not fit even with their values shortened; its preview shows the first %d as text", read, len(preview))}
}
