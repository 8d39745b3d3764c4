package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/plural"
)

// The preview as it was written before it was written piece by piece:
// each try built the shortened tree and marshalled it whole.

// value returns v shortened, leaving v as it was: the same tree is
// shortened again with other bounds.
func (sh *shortening) refValue(v any, path *valuePath, depth int) any {
	switch x := v.(type) {
	case string:
		what := fmt.Sprintf("a string of %d bytes", len(x))
		if strings.HasSuffix(x, readCutMark) {
			// Its start only was read (cutValue).
			what = fmt.Sprintf("a string of more than %d bytes", len(x)-len(readCutMark))
		}
		if len(x)-len(ShortenedMark)-len(what)-1 > sh.str {
			return cutBytes(x, sh.str) + sh.mark(path, "", what)
		}
	case map[string]any:
		if depth > sh.depth {
			return sh.mark(path, "", "an object of "+plural.Count(len(x), "key", "keys"))
		}
		return sh.refObject(x, path, depth)
	case []any:
		if depth > sh.depth {
			return sh.mark(path, "", "an array of "+plural.Count(len(x), "item", "items"))
		}
		keep := len(x)
		if len(x)-1 > sh.items {
			keep = sh.items
		}
		out := make([]any, 0, keep+1)
		for i, e := range x[:keep] {
			out = append(out, sh.refValue(e, path.item(i), depth+1))
		}
		if keep < len(x) {
			out = append(out, sh.mark(path, fmt.Sprintf("[%d:]", keep), fmt.Sprintf("an array of %d items, %s", len(x), firstShown(keep))))
		}
		return out
	}
	return v
}

// object shortens the members of x, in key order (the order a view shows
// them in). The payload's own keys are never cut: only those of nested
// objects, whose cut is marked by one more member.
func (sh *shortening) refObject(x map[string]any, path *valuePath, depth int) map[string]any {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if depth > 0 && len(keys)-1 > sh.items {
		keys = keys[:sh.items]
	}
	out := make(map[string]any, len(keys)+1)
	for _, k := range keys {
		out[k] = sh.refValue(x[k], path.member(k), depth+1)
	}
	if len(keys) < len(x) {
		key := "…"
		for _, taken := x[key]; taken; _, taken = x[key] {
			key += "…"
		}
		out[key] = sh.mark(path, "", fmt.Sprintf("an object of %d keys, %s", len(x), firstShown(len(keys))))
	}
	return out
}

// shortPreview returns the redacted payload red shortened to at most max
// bytes of JSON, each cut marked: long strings first, then long arrays and
// nested objects, then deep containers, each no more than it must, so
// that every key of the payload shows. ok is false when even that does
// not fit (too many keys, or keys too long).
func refShortPreview(red json.RawMessage, max int) (preview string, sh shortening, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(red))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return "", sh, false
	}
	try := func(s shortening) (string, shortening, bool) {
		out := marshalPlain(s.refValue(tree, nil, 0))
		return string(out), s, len(out) <= max
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

// TestShortPreviewAsTheTreeWrote checks the preview written piece by
// piece against the shortened tree marshalled whole, on payloads of
// every shape, with marks, places and counts alike.
func TestShortPreviewAsTheTreeWrote(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(6); {
		case k == 0 || depth > 4:
			return strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(300)) + "é"
		case k == 1:
			return json.Number(fmt.Sprint(r.IntN(100000)))
		case k == 2:
			m := map[string]any{}
			for i := range r.IntN(12) {
				m[fmt.Sprintf("%c%d", "abzé…你"[r.IntN(3)], i)] = gen(depth + 1)
			}
			if r.IntN(4) == 0 {
				m["…"] = "taken"
			}
			return m
		case k == 3:
			a := []any{}
			for range r.IntN(30) {
				a = append(a, gen(depth+1))
			}
			return a
		case k == 4:
			return nil
		}
		return r.IntN(2) == 0
	}
	shortened := 0
	for i := range 80 {
		tree := map[string]any{"top": gen(0), "list": gen(1), "x": gen(2)}
		red := marshalPlain(tree)
		for _, max := range []int{64, 300, 1024, 4096} {
			got, gsh, gok := shortPreview(red, max)
			want, wsh, wok := refShortPreview(red, max)
			if got != want || gok != wok || gsh.n != wsh.n || !slices.Equal(gsh.places, wsh.places) {
				t.Fatalf("case %d, max %d: preview %q (%v, %d, %q)\nwant %q (%v, %d, %q)", i, max, got, gok, gsh.n, gsh.places, want, wok, wsh.n, wsh.places)
			}
			if gok && gsh.n > 0 {
				shortened++
			}
		}
	}
	if shortened < 50 {
		t.Errorf("%d previews were shortened; want cases enough to compare", shortened)
	}
}
