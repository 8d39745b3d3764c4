package demo

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The demo's MCP hints give each client the file shape README.md shows for
// it, and mcp.json (the ready copy README gives for Cursor) has Cursor's.
func TestMCPHintsMatchREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mcpClientFiles {
		for _, client := range f.Clients {
			_, after, ok := strings.Cut(string(readme), "**"+client+"**")
			if !ok {
				t.Errorf("README.md has no part **%s**", client)
				continue
			}
			_, block, _ := strings.Cut(after, "```json\n")
			block, _, _ = strings.Cut(block, "```")
			checkClientFile(t, "README.md for "+client, []byte(block), f)
		}
	}
	root, err := os.ReadFile("../../mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mcpClientFiles {
		if slices.Contains(f.Clients, "Cursor") {
			entry := checkClientFile(t, "mcp.json", root, f)
			if want := (mcpServer{Command: "pgbus", Args: []string{"serve"}}); !reflect.DeepEqual(entry, want) {
				t.Errorf("mcp.json's pgbus entry %+v, want %+v", entry, want)
			}
		}
	}

	hints, err := mcpConfigHints(mcpServer{Command: "pgbus", Args: []string{"serve"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mcpClientFiles {
		_, after, _ := strings.Cut(hints, "in "+f.Where+":\n")
		line, _, _ := strings.Cut(after, "\n")
		checkClientFile(t, "the demo's hint for "+f.Where, []byte(line), f)
	}
}

// checkClientFile checks that text is a client file of f's shape and
// returns pgbus's entry.
func checkClientFile(t *testing.T, where string, text []byte, f mcpClientFile) mcpServer {
	t.Helper()
	var file map[string]map[string]mcpServer
	if err := json.Unmarshal(text, &file); err != nil {
		t.Errorf("%s: %v in %s", where, err, text)
		return mcpServer{}
	}
	entry, ok := file[f.Key]["pgbus"]
	if len(file) != 1 || !ok {
		t.Errorf("%s: want pgbus under %q, got %s", where, f.Key, text)
	}
	if typed := entry.Type != ""; typed != f.Typed {
		t.Errorf("%s: entry type %q, want one: %v", where, entry.Type, f.Typed)
	}
	return entry
}
