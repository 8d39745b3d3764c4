package ops_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// ErrorKind names the class of the errors operations return, and of a
// database that cannot be reached at all: a cancelled call is stopped,
// whatever it was waiting for.
func TestErrorKind(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	ro := newService(t, s, ops.Options{ReadOnly: true})
	q := newQueue(t, s, nil)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	call := func(_ any, err error) error { return err }
	_, unreachable := store.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"not found":   {call(svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: 1})), ops.KindNotFound},
		"invalid":     {call(svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Since: "last tuesday"}})), ops.KindInvalid},
		"read-only":   {call(ro.QueuePause(ctx, ops.QueueRequest{Queue: q})), ops.KindReadOnly},
		"cancelled":   {call(svc.DLQShow(cancelled, ops.DLQShowRequest{Queue: q, MsgID: 1})), ops.KindStopped},
		"unreachable": {unreachable, ops.KindUnavailable},
		"other":       {errors.New("disk on fire"), ops.KindFailed},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", name)
		} else if got := ops.ErrorKind(c.err); got != c.want {
			t.Errorf("%s: ErrorKind(%v) = %q, want %q", name, c.err, got, c.want)
		}
	}
}

// No error is of no kind: ErrorKind(nil) is empty, not failed, which a
// caller that asks it of a call's result without a check of its own would
// take for a failure.
func TestErrorKindOfNoError(t *testing.T) {
	t.Parallel()
	if got := ops.ErrorKind(nil); got != "" {
		t.Errorf("ErrorKind(nil) = %q, want \"\"", got)
	}
	if got := ops.ErrorKind(errors.New("disk on fire")); got != ops.KindFailed {
		t.Errorf("ErrorKind of an error of no known class = %q, want %q", got, ops.KindFailed)
	}
}

// Kinds lists every Kind constant kind.go declares, and nothing else, so
// that a front end checking its kinds against it checks them against the
// documented words.
func TestKindsAreTheKindConstants(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "kind.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for i, name := range spec.(*ast.ValueSpec).Names {
				if lit, ok := spec.(*ast.ValueSpec).Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Kind") {
					word, _ := strconv.Unquote(lit.Value)
					declared = append(declared, word)
				}
			}
		}
	}
	got := slices.Sorted(slices.Values(ops.Kinds()))
	slices.Sort(declared)
	if len(declared) == 0 || !slices.Equal(got, declared) {
		t.Errorf("Kinds() = %v, want the Kind constants of kind.go: %v", got, declared)
	}
}

// A Go caller's own deadline, passed before engine.Client.Send could
// read the queue, is stopped with no next step, as the ErrorKind doc says,
// where the store's taking a bare deadline for a lost connection made it
// unavailable with the health check to run; a server that does not answer
// a connection within its connect timeout, which also wraps
// context.DeadlineExceeded, stays unavailable.
func TestCallerDeadlineOfAnEngineSendIsStopped(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	c, err := engine.NewClient(s, engine.Config{RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	passed, cancel := context.WithDeadline(testContext(t), time.Now().Add(-time.Second))
	defer cancel()
	_, err = c.Send(passed, q, 1, engine.SendOptions{})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send with a passed deadline: %v", err)
	}
	if k, next := ops.ErrorKind(err), ops.NextSteps(err); k != ops.KindStopped || len(next) != 0 {
		t.Errorf("Send with a passed deadline: %v: kind %s, next steps %v; want stopped, none", err, k, next)
	}
	_, err = c.SendBatch(passed, q, []engine.BatchMessage{{Payload: 1}})
	if k := ops.ErrorKind(err); err == nil || k != ops.KindStopped {
		t.Errorf("SendBatch with a passed deadline: %v: kind %s, want stopped", err, k)
	}

	// A server that takes the connection and never answers it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	_, err = store.Open(testContext(t), "postgres://nobody@"+ln.Addr().String()+"/none?connect_timeout=1")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open on a server that does not answer: %v; want a connection that timed out", err)
	}
	if k, next := ops.ErrorKind(err), ops.NextSteps(err); k != ops.KindUnavailable || len(next) != 1 || next[0].Op != ops.OpHealth {
		t.Errorf("Open on a server that does not answer: %v: kind %s, next steps %v; want unavailable, health", err, k, next)
	}
}
