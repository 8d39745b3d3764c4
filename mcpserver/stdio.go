package mcpserver

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/ops"
)

// MaxStdioLineBytes bounds a line, one message, that ServeStdio reads:
// twice the largest payload a message may carry (ops.MaxPayloadBytes),
// which a tool call can hold with room to spare. A longer line is read to
// its end without being kept, and answered with an invalid request error
// (id null, since its id was not read), and the session goes on.
const MaxStdioLineBytes = 16 << 20

// ServeStdio serves s over newline-delimited JSON-RPC on in and out until in
// ends (the client closed it) or ctx is done. Only protocol messages are
// written to out; the transport's own errors go to logger. It returns nil
// on both ways of ending.
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, logger *slog.Logger) error {
	if err := refuseNil("ServeStdio", needContext(ctx), needServer(s)); err != nil {
		return err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(log.New(slogWriter{logger}, "", 0))
	// The tools add the client's declared name to the transport.
	ctx = ops.WithCaller(ctx, ops.Caller{Transport: ops.TransportStdio})
	// pgbus answers some messages itself (frontDoor), on the same output.
	// The answers to the requests the client cancelled are left out.
	cancels := &stdioCancels{}
	lines := &lineWriter{w: out, cancels: cancels}
	door := newStdioDoor(ctx, frontDoor{s: s, each: eachLine}, in, lines, cancels)
	door.log = logger
	err := stdio.Listen(ctx, door, lines)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

// slogWriter turns the lines a log.Logger writes into slog error records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Error("mcp transport: " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
