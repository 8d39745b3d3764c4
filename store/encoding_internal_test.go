package store

import "testing"

// What TextShown reads back is the text textFit stored, for each kind of
// encoding that fits texts; in LATIN1 an escape the text held itself, of
// a letter the encoding has or in a spelling fitFor never writes, stays
// as it is.
func TestUnfitReadsBackWhatFitWrote(t *testing.T) {
	t.Parallel()
	texts := []string{"тест 7 сломан", "café ☕ 😀", ""}
	for _, c := range []struct {
		enc   string
		limit rune
		texts []string
	}{{"LATIN1", 0xFF, append(texts, `plain \u0041 \u00e9 \U0000041e \u041E \uzzzz \`)}, {"WIN1251", 0x7F, texts}} {
		fit := fitFor(c.enc)
		for _, s := range c.texts {
			if stored, back := fit(s), unfit(fit(s), c.limit); back != s {
				t.Errorf("%s: %q stored as %q read back as %q; want it as written", c.enc, s, stored, back)
			}
		}
	}
}
