package store_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/store"
)

// A payload nested too deeply is said to be so, with what to do, where
// the reader's own words ("invalid character '['") read as a typo; other
// invalid JSON keeps the reader's words; valid JSON passes.
func TestJSONErrorSaysTooDeep(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", store.MaxJSONDepth+1) + strings.Repeat("]", store.MaxJSONDepth+1)
	if err := store.JSONError([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nest more than 10000 levels deep") || !strings.Contains(err.Error(), "flatten it") {
		t.Errorf("JSONError of %d levels = %v; want it said too deep, with what to do", store.MaxJSONDepth+1, err)
	}
	ok := strings.Repeat("[", store.MaxJSONDepth) + strings.Repeat("]", store.MaxJSONDepth)
	if err := store.JSONError([]byte(ok)); err != nil {
		t.Errorf("JSONError of %d levels = %v; want none", store.MaxJSONDepth, err)
	}
	if err := store.JSONError([]byte(`{"a":`)); err == nil || strings.Contains(err.Error(), "levels deep") {
		t.Errorf("JSONError of a cut object = %v; want the reader's error", err)
	}
	if err := store.JSONError([]byte(`1 2`)); err == nil {
		t.Error("JSONError of two values = nil; want an error")
	}
}
