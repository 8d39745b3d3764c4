package mcpserver

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// need is an argument a call cannot do without: missing when the caller
// passed nil for it, and what to pass instead.
type need struct {
	missing bool
	what    string
}

// refuseNil is the first step of every exported function of this package
// that takes a context, a server or the operations layer: a nil one is
// refused with an error that says what to pass, rather than panicking
// once serving has begun. fn names the call, as a Go caller wrote it.
func refuseNil(fn string, needs ...need) error {
	for _, n := range needs {
		if n.missing {
			return fmt.Errorf("%w: mcpserver.%s needs %s", ops.ErrInvalid, fn, n.what)
		}
	}
	return nil
}

func needContext(ctx context.Context) need {
	return need{ctx == nil, "a context, and serves until it ends: pass one from context.WithCancel(context.Background())"}
}

func needServer(s *server.MCPServer) need {
	return need{s == nil, "a server: pass the one mcpserver.New returns"}
}

func needOps(svc *ops.Service) need {
	return need{svc == nil, "tools.Deps.Ops, the operations layer: make one with ops.New"}
}
