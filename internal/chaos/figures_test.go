package chaos_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// callTool calls an MCP tool that must succeed and decodes its structured
// content.
func (h *harness) callTool(out any, name string, args map[string]any) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := h.mcp.CallTool(ctx, req)
	if err != nil || res.IsError {
		h.t.Fatalf("%s: %v %v", name, err, res)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
}

// logFigures logs what the soak did and where the messages ended, the
// figures the README quotes.
func (h *harness) logFigures(where map[string]int, elapsed time.Duration) {
	t, f := h.t, h.fix
	kills, exits, refused, starts := h.fleet.counts()
	ok, fails := h.down.totals()
	sent := len(h.send.sent)
	t.Logf("messages sent: %d in %s (%.1f/s end to end, settling included)", sent, elapsed.Round(time.Second), float64(sent)/elapsed.Seconds())
	t.Logf("workers: %d SIGKILLs, %d exits on their own while working, %d before (PostgreSQL restarting), %d starts", kills, exits, refused, starts)
	t.Logf("PostgreSQL restarts: %d fast, %d immediate, %d failed", h.restarts["fast"], h.restarts["immediate"], h.restartErrs)
	for _, call := range slices.Sorted(maps.Keys(f.calls)) {
		t.Logf("repair calls: %-30s %d", call, f.calls[call])
	}
	t.Logf("repairs: %d messages retried (%d unsure), %d discarded (%d unsure), %d calls failed under a restart",
		f.retried, f.retryUnsure, f.discarded, f.discardUnsure, f.errors)
	t.Logf("downstream: %d answers 200, %d failing", ok, fails)
	for _, tbl := range slices.Sorted(maps.Keys(where)) {
		t.Logf("end: %-16s %d", tbl, where[tbl])
	}
}
