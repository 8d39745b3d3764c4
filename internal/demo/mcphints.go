package demo

import (
	"encoding/json"
	"fmt"
	"strings"
)

// mcpClientFile is the configuration file of some MCP clients: the key
// its servers are listed under, and whether an entry names its transport.
type mcpClientFile struct {
	Clients []string // as README.md names them
	Where   string
	Key     string
	Typed   bool
}

// mcpClientFiles are the files the demo's hints show, as README.md does:
// Claude Desktop and Cursor list servers under mcpServers (so does
// mcp.json), VS Code under servers, each with a type.
var mcpClientFiles = []mcpClientFile{
	{Clients: []string{"Claude Desktop", "Cursor"}, Where: "claude_desktop_config.json or .cursor/mcp.json", Key: "mcpServers"},
	{Clients: []string{"VS Code"}, Where: ".vscode/mcp.json", Key: "servers", Typed: true},
}

// mcpConfigHints shows pgbus's entry in each client's file.
func mcpConfigHints(server mcpServer) (string, error) {
	var b strings.Builder
	for _, f := range mcpClientFiles {
		s := server
		if f.Typed {
			s.Type = "stdio"
		}
		// Written for a person to read and copy: a placeholder such as
		// <the database URL of this run> stays as it is, not \u003c.
		var text strings.Builder
		enc := json.NewEncoder(&text)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{f.Key: map[string]any{"pgbus": s}}); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  For %s, in %s:\n    %s\n", strings.Join(f.Clients, " or "), f.Where, strings.TrimSuffix(text.String(), "\n"))
	}
	return b.String(), nil
}

// mcpServer is pgbus's entry in an MCP client's configuration file.
type mcpServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}
