package yamlerr_test

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pgbus/pgbus/internal/yamlerr"
)

type inner struct{ X int }

func TestReasonAndLine(t *testing.T) {
	type target struct {
		N     int               `yaml:"n"`
		F     float64           `yaml:"f"`
		B     bool              `yaml:"b"`
		S     string            `yaml:"s"`
		L     []int             `yaml:"l"`
		M     map[string]string `yaml:"m"`
		Inner inner             `yaml:"inner"`
	}
	cases := []struct {
		doc    string
		line   int
		reason string
	}{
		{"n: ten", 1, `"ten" is not a whole number`},
		{"\nf: lots", 2, `"lots" is not a number`},
		{"b: maybe", 1, `"maybe" is not true or false`},
		{"s: [a]", 1, "expected text, got a list"},
		{"l: 5", 1, "expected a list, got a plain value"},
		{"l: {a: 1}", 1, "expected a list, got a mapping"},
		{"m: x", 1, "expected a mapping (key: value lines), got a plain value"},
		{"m: Zq8SecretQ1", 1, "expected a mapping (key: value lines), got a plain value"},
		{"inner: x", 1, "expected a mapping (key: value lines), got a plain value"},
		{"n: [1", 1, "did not find expected ',' or ']'"},
	}
	for _, c := range cases {
		var v target
		err := yaml.Unmarshal([]byte(c.doc), &v)
		if err == nil {
			t.Errorf("%q decoded", c.doc)
			continue
		}
		line, msg, _ := yamlerr.First(err)
		if got := yamlerr.Words(msg); line != c.line || got != c.reason {
			t.Errorf("%q: line %d reason %q, want line %d reason %q (from %v)", c.doc, line, got, c.line, c.reason, err)
		}
		if got := yamlerr.Reason(err); got != yamlerr.Words(msg) {
			t.Errorf("%q: Reason %q", c.doc, got)
		}
	}
}

func TestFirstCountsTheRest(t *testing.T) {
	var v struct {
		A int `yaml:"a"`
		B int `yaml:"b"`
	}
	err := yaml.Unmarshal([]byte("a: x\nb: y\n"), &v)
	if line, _, more := yamlerr.First(err); line != 1 || more != 1 {
		t.Fatalf("line %d, %d more; want 1, 1 (from %v)", line, more, err)
	}
}

// A tab in a line's indentation is named as such, with its line and
// column, wherever the decoder found it; the same message about another
// character is not put down to a tab.
func TestTabsIndent(t *testing.T) {
	cases := []struct {
		doc       string
		line, col int
	}{
		{"\ta: 1\n", 1, 1},
		{"workers:\n\t- queue: x\n", 2, 1},
		{"a:\n  \tb: 1\n", 2, 3},
		{"a: 1\nqueues:\n  - x: 1\n\ty: 2\n", 4, 1},
		{"a: 1\nb: `x`\n\tc: 1\n", 0, 0},
		{"a: @x\n", 0, 0},
	}
	for _, c := range cases {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(c.doc), &n)
		if err == nil {
			t.Errorf("%q decoded", c.doc)
			continue
		}
		line, col, reason, ok := yamlerr.TabsIndent([]byte(c.doc), err)
		if ok != (c.line > 0) || line != c.line || col != c.col || ok && !strings.Contains(reason, "YAML indents with spaces, not tabs") {
			t.Errorf("%q: line %d column %d reason %q (%v); want line %d column %d (from %v)", c.doc, line, col, reason, ok, c.line, c.col, err)
		}
	}
}
