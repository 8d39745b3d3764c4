package tools

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's example of a tool error's partly_done, in the section on
// the MCP server, is one a tool call can give: a limit no larger than a
// call by filter takes over MCP, and no more done than that limit.
func TestREADMEPartlyDoneOfAToolFitsItsLimit(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Use pgbus from an AI agent (MCP)")
	end := strings.Index(text, "## Dashboard")
	if start < 0 || end < start {
		t.Fatal("README has no section on the MCP server before the dashboard's")
	}
	examples := regexp.MustCompile("`partly_done`[^`]*`(\\{[^`]*\\})`").FindAllStringSubmatch(text[start:end], -1)
	if len(examples) == 0 {
		t.Fatal("the README's section on the MCP server gives no example of partly_done")
	}
	for _, m := range examples {
		var p struct{ Done, Limit int }
		if err := json.Unmarshal([]byte(m[1]), &p); err != nil {
			t.Fatalf("partly_done example %s: %v", m[1], err)
		}
		if p.Limit < 1 || p.Limit > maxBulk || p.Done > p.Limit {
			t.Errorf("partly_done example %s: a tool call by filter takes a limit of 1 to %d, and does no more than it", m[1], maxBulk)
		}
	}
}
