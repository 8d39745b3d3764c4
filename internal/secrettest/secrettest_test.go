package secrettest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/secrettest"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestAssertHiddenCatchesEveryValue(t *testing.T) {
	for _, s := range secrettest.Corpus {
		for _, out := range []string{"before " + s.Value + " after", mustJSON(t, map[string]string{"v": "x" + s.Value})} {
			r := &recorder{TB: t}
			secrettest.AssertHidden(r, out)
			if len(r.errors) == 0 {
				t.Errorf("%s: AssertHidden passed output holding %q", s.Name, s.Value)
			}
		}
	}
	r := &recorder{TB: t}
	secrettest.AssertHidden(r, `{"password":"[REDACTED]","author":"ada","order_id":42}`)
	if len(r.errors) != 0 {
		t.Fatalf("AssertHidden failed redacted output: %v", r.errors)
	}
}

func TestCorpusIsWellFormed(t *testing.T) {
	where := map[string]int{}
	keys := map[string]bool{}
	for _, s := range secrettest.Corpus {
		where[s.Where]++
		if s.Name == "" || s.Value == "" {
			t.Errorf("item %+v lacks a name or value", s)
		}
		switch s.Where {
		case secrettest.Payload, secrettest.Header:
			var m map[string]any
			if err := json.Unmarshal([]byte(s.JSON), &m); err != nil {
				t.Errorf("%s: JSON %s: %v", s.Name, s.JSON, err)
			}
			if !strings.Contains(s.JSON, s.Value) {
				t.Errorf("%s: JSON %s does not hold %q", s.Name, s.JSON, s.Value)
			}
			for _, n := range secrettest.NeighbourTexts {
				if !strings.Contains(s.JSON, n) {
					t.Errorf("%s: JSON %s lacks the neighbour %s", s.Name, s.JSON, n)
				}
			}
			for k := range m {
				keys[k] = true
			}
		case secrettest.Error, secrettest.Backtrace, secrettest.Kind:
			if !strings.Contains(s.Text, s.Value) || s.JSON != "" {
				t.Errorf("%s: text %q does not hold %q", s.Name, s.Text, s.Value)
			}
		default:
			t.Errorf("%s: unknown place %q", s.Name, s.Where)
		}
		if strings.Contains(s.Value, "ada") || s.Value == "42" {
			t.Errorf("%s: value %q would match a neighbour", s.Name, s.Value)
		}
	}
	for _, w := range []string{secrettest.Payload, secrettest.Header, secrettest.Error, secrettest.Backtrace} {
		if where[w] < 10 {
			t.Errorf("%d items in %s, want at least 10", where[w], w)
		}
	}
	for _, k := range secrettest.SecretKeys {
		if !keys[k] {
			t.Errorf("no item puts a secret at the top under %q", k)
		}
	}
	if len(secrettest.Texts(secrettest.Error)) != where[secrettest.Error] {
		t.Errorf("Texts(error) = %d, want %d", len(secrettest.Texts(secrettest.Error)), where[secrettest.Error])
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
