package ops

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/redact"
)

// ShortenedMark starts every mark a shortened payload preview leaves
// where it cut a value, followed by what the value was, such as
// "…[shortened: a string of 20480 bytes]". A corrected payload that holds
// it is refused: it was copied from a preview, and would replace the
// values with their shortened starts.
const ShortenedMark = "…[shortened: "

// minPreviewString is the shortest start of a long string a shortened
// preview keeps: shorter, a string says too little to be worth its key.
const minPreviewString = 32

// shortening is one way of shortening a payload to fit a preview: strings
// keep their first str bytes, arrays and nested objects their first items
// members, and containers deeper than depth are left out; each cut is
// marked in place with ShortenedMark. places names the first cuts, n
// counts them all.
type shortening struct {
	str, items, depth int
	places            []string
	n                 int
}

// unshortened leaves every value as it is.
var unshortened = shortening{str: math.MaxInt, items: math.MaxInt, depth: math.MaxInt}

// valuePath is where a value is in the payload: a step from its parent's
// place, nil for the payload itself. It is written out only for the cuts a
// note names: a path written out at every level of a payload nested ten
// thousand deep cost the square of its depth, gigabytes for 20 KB.
type valuePath struct {
	up    *valuePath
	key   string // a member's key, when index is -1
	index int    // an item's index
}

func (p *valuePath) member(key string) *valuePath { return &valuePath{up: p, key: key, index: -1} }
func (p *valuePath) item(i int) *valuePath        { return &valuePath{up: p, index: i} }

// String writes the path out as $.key[2]["odd key"].
func (p *valuePath) String() string {
	var steps []*valuePath
	for q := p; q != nil; q = q.up {
		steps = append(steps, q)
	}
	var b strings.Builder
	b.WriteString("$")
	for i := len(steps) - 1; i >= 0; i-- {
		if st := steps[i]; st.index < 0 {
			b.WriteString(memberPath(st.key))
		} else {
			fmt.Fprintf(&b, "[%d]", st.index)
		}
	}
	return b.String()
}

// mark records a cut of what at path, followed by suffix, and returns its
// mark.
func (sh *shortening) mark(path *valuePath, suffix, what string) string {
	sh.n++
	if len(sh.places) < maxMarkerPlaces {
		sh.places = append(sh.places, path.String()+suffix+" ("+what+")")
	}
	return ShortenedMark + what + "]"
}

// write appends v shortened to dst as JSON, leaving v as it was: the same
// tree is shortened again with other bounds. It stops, ok false, once dst
// is longer than limit: a try that does not fit costs what fits, not the
// payload.
func (sh *shortening) write(dst []byte, v any, path *valuePath, depth, limit int) (_ []byte, ok bool) {
	switch x := v.(type) {
	case string:
		what := fmt.Sprintf("a string of %d bytes", len(x))
		if strings.HasSuffix(x, readCutMark) {
			// Its start only was read (cutValue).
			what = fmt.Sprintf("a string of more than %d bytes", len(x)-len(readCutMark))
		}
		if len(x)-len(ShortenedMark)-len(what)-1 > sh.str {
			x = cutBytes(x, sh.str) + sh.mark(path, "", what)
		}
		dst = redact.AppendPlain(dst, x)
	case map[string]any:
		if depth > sh.depth {
			dst = redact.AppendPlain(dst, sh.mark(path, "", "an object of "+plural.Count(len(x), "key", "keys")))
			break
		}
		return sh.object(dst, x, path, depth, limit)
	case []any:
		if depth > sh.depth {
			dst = redact.AppendPlain(dst, sh.mark(path, "", "an array of "+plural.Count(len(x), "item", "items")))
			break
		}
		keep := len(x)
		if len(x)-1 > sh.items {
			keep = sh.items
		}
		dst = append(dst, '[')
		for i, e := range x[:keep] {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = sh.write(dst, e, path.item(i), depth+1, limit); !ok {
				return dst, false
			}
		}
		if keep < len(x) {
			if keep > 0 {
				dst = append(dst, ',')
			}
			dst = redact.AppendPlain(dst, sh.mark(path, fmt.Sprintf("[%d:]", keep), fmt.Sprintf("an array of %d items, %s", len(x), firstShown(keep))))
		}
		dst = append(dst, ']')
	default:
		dst = redact.AppendPlain(dst, v)
	}
	return dst, len(dst) <= limit
}

// object writes the members of x shortened, in key order (the order a
// view shows them in). The payload's own keys are never cut: only those
// of nested objects, whose cut is marked by one more member, written in
// its place in key order but counted after the members it follows.
func (sh *shortening) object(dst []byte, x map[string]any, path *valuePath, depth, limit int) (_ []byte, ok bool) {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if depth > 0 && len(keys)-1 > sh.items {
		keys = keys[:sh.items]
	}
	markKey, markAt := "", len(keys)
	if len(keys) < len(x) {
		markKey = "…"
		for _, taken := x[markKey]; taken; _, taken = x[markKey] {
			markKey += "…"
		}
		markAt, _ = slices.BinarySearch(keys, markKey)
	}
	// The mark's text, counted once the members before and after it are.
	markWhat := fmt.Sprintf("an object of %d keys, %s", len(x), firstShown(len(keys)))
	dst = append(dst, '{')
	for i := 0; i <= len(keys); i++ {
		if i == markAt && markKey != "" {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = redact.AppendPlain(dst, markKey)
			dst = append(dst, ':')
			dst = redact.AppendPlain(dst, ShortenedMark+markWhat+"]")
		}
		if i == len(keys) {
			break
		}
		if i > 0 || i == markAt && markKey != "" {
			dst = append(dst, ',')
		}
		dst = redact.AppendPlain(dst, keys[i])
		dst = append(dst, ':')
		if dst, ok = sh.write(dst, x[keys[i]], path.member(keys[i]), depth+1, limit); !ok {
			return dst, false
		}
	}
	if markKey != "" {
		sh.mark(path, "", markWhat)
	}
	dst = append(dst, '}')
	return dst, len(dst) <= limit
}

// shortPreview returns the redacted payload red shortened to at most max
// bytes of JSON, each cut marked: long strings first, then long arrays and
// nested objects, then deep containers, each no more than it must, so
// that every key of the payload shows. ok is false when even that does
// not fit (too many keys, or keys too long).
func shortPreview(red json.RawMessage, max int) (preview string, sh shortening, ok bool) {
	tree, ok := redact.Decode(red)
	if !ok {
		return "", sh, false
	}
	return shortPreviewTree(tree, max)
}

// shortPreviewTree is shortPreview for the redacted payload decoded.
func shortPreviewTree(tree any, max int) (preview string, sh shortening, ok bool) {
	var buf []byte
	try := func(s shortening) (string, shortening, bool) {
		var fits bool
		buf, fits = s.write(buf[:0], tree, nil, 0, max)
		if !fits {
			return "", s, false
		}
		return string(buf), s, true
	}
	stages := []struct {
		lo, hi int
		with   func(shortening, int) shortening
	}{
		{minPreviewString, max, func(s shortening, n int) shortening { s.str = n; return s }},
		{1, max, func(s shortening, n int) shortening { s.items = n; return s }},
		{0, depthOf(tree), func(s shortening, n int) shortening { s.depth = n; return s }},
	}
	base := unshortened
	for _, st := range stages {
		n, found := largest(st.lo, st.hi, func(n int) bool { _, _, fits := try(st.with(base, n)); return fits })
		if found {
			return try(st.with(base, n))
		}
		base = st.with(base, st.lo) // the next stage cuts on top of this one at its tightest
	}
	return "", sh, false
}

// largest returns the largest n in [lo, hi] for which fits holds, fits
// being false above some n and true below it; found is false when it
// holds for none.
func largest(lo, hi int, fits func(int) bool) (n int, found bool) {
	if hi < lo || !fits(lo) {
		return 0, false
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, true
}

// depthOf is how deep containers nest in v: 0 for a scalar, 1 for a
// container of scalars (or an empty one).
func depthOf(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// firstShown says how many members of a cut array or object are shown.
func firstShown(n int) string {
	return plural.Of(n, "the first shown", fmt.Sprintf("the first %d shown", n))
}

// shortenedNote says what a shortened preview cut, and where.
func shortenedNote(size, shown int, sh shortening) string {
	return fmt.Sprintf("payload truncated: it is %d bytes; its preview shows it as JSON of %d bytes with %s", size, shown, shortenedWhere(sh))
}

// shortenedWhere says how many values a preview shortened, and where.
func shortenedWhere(sh shortening) string {
	where := strings.Join(sh.places, ", ")
	if sh.n > len(sh.places) {
		where += fmt.Sprintf(" and %d more", sh.n-len(sh.places))
	}
	return fmt.Sprintf("%d %s shortened, each marked %s…] in place: %s", sh.n, plural.Of(sh.n, "value", "values"), ShortenedMark, where)
}
