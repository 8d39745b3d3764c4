package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/tools"
)

// Every tool argument that takes a time says that a bare date is its
// midnight in UTC, as the command line's help does.
func TestDateArgumentsSayMidnightUTC(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, st := range tools.All(listDeps(t, false)) {
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		var whole map[string]json.RawMessage
		if err := json.Unmarshal(toolSnapshot(t, st.Tool), &whole); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(whole["inputSchema"], &schema); err != nil {
			t.Fatalf("%s: %v", st.Tool.Name, err)
		}
		for _, name := range []string{"since", "until"} {
			p, ok := schema.Properties[name]
			if !ok {
				continue
			}
			seen++
			if !strings.Contains(p.Description, "midnight UTC") {
				t.Errorf("%s's %s: %q does not say a date is its midnight UTC", st.Tool.Name, name, p.Description)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no tool takes since or until")
	}
}
