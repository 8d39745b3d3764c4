package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// The investigation prompt, read over a real transport, moves a group by
// its key, after a dry run and with its expect: by kind and error class,
// a retry would take every group sharing them, causes not yet fixed
// included, and without expect whatever died since.
func TestInvestigatePromptMovesGroupsByKeyWithExpect(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c := guardClient(t, base, nil)
	q := newQueue(t, s)
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = "investigate_dead_letters", map[string]string{"queue": q}
	res, err := c.GetPrompt(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(mcp.TextContent).Text
	for _, want := range []string{
		`pgbus_dlq_list {"queue": "` + q + `", "group": "<group>"}`,
		`pgbus_dlq_retry {"queue": "` + q + `", "group": "<group>", "limit": 100, "dry_run": true}`,
		`"expect": "<expect>"`,
		`"confirm": true`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt does not say %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, `"kind": "<kind>", "limit"`) {
		t.Errorf("the prompt still moves messages by kind and error class:\n%s", text)
	}
}
