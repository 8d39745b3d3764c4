package mcpserver_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/mcpserver"
)

// cities completes every prompt argument with a fixed list.
type cities struct{}

func (cities) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	return &mcp.Completion{Values: []string{prompt + "/" + arg.Name + "=" + arg.Value, "paris"}}, nil
}

// Options.ServerOptions reach mcp-go: a program built on pgbus's server
// can offer argument completion, which pgbus itself does not, and keeps
// pgbus's own capabilities and tools.
func TestServerOptions(t *testing.T) {
	t.Parallel()
	d := deps(t, testStore(t))
	ctx := testContext(t)

	plain, err := client.NewInProcessClient(newServer(t, d, mcpserver.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if init := connect(t, plain); init.Capabilities.Completions != nil {
		t.Errorf("pgbus's own server declares completions: %+v", init.Capabilities)
	}

	s := newServer(t, d, mcpserver.Options{ServerOptions: []server.ServerOption{
		server.WithCompletions(),
		server.WithPromptCompletionProvider(cities{}),
	}})
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	init := connect(t, c)
	if init.Capabilities.Completions == nil {
		t.Errorf("completions not declared with server.WithCompletions: %+v", init.Capabilities)
	}
	if init.Capabilities.Logging == nil || init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe {
		t.Errorf("pgbus's own capabilities lost: %+v", init.Capabilities)
	}
	if _, ok := toolNames(t, c)["pgbus_health"]; !ok {
		t.Error("pgbus_health is not listed")
	}
	var req mcp.CompleteRequest
	req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "trip"}
	req.Params.Argument = mcp.CompleteArgument{Name: "city", Value: "par"}
	res, err := c.Complete(ctx, req)
	if err != nil {
		t.Fatalf("completion/complete: %v", err)
	}
	if want := []string{"trip/city=par", "paris"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("completion values %q, want %q", res.Completion.Values, want)
	}
}
