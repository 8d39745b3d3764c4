package tools_test

import (
	"slices"
	"testing"

	"github.com/pgbus/pgbus/tools"
)

// Names and WriteNames, which the command line's help words, are the
// tools a server lists, and those a read-only one leaves out.
func TestNamesAreTheToolsListed(t *testing.T) {
	t.Parallel()
	var all, left []string
	readOnly := map[string]bool{}
	for _, st := range tools.All(listDeps(t, true)) {
		readOnly[st.Tool.Name] = true
	}
	for _, st := range tools.All(listDeps(t, false)) {
		all = append(all, st.Tool.Name)
		if !readOnly[st.Tool.Name] {
			left = append(left, st.Tool.Name)
			if *st.Tool.Annotations.ReadOnlyHint {
				t.Errorf("%s is left out of a read-only server but annotated read-only", st.Tool.Name)
			}
		}
	}
	if got := tools.Names(); !slices.Equal(got, all) {
		t.Errorf("Names() = %q; the server lists %q", got, all)
	}
	if got := tools.WriteNames(); !slices.Equal(got, left) {
		t.Errorf("WriteNames() = %q; a read-only server leaves out %q", got, left)
	}
}
