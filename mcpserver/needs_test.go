package mcpserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// The server's constructor and the functions that serve it refuse a nil
// operations layer, server or context with an error that says what to
// pass, rather than panicking once serving has begun; a listener they
// were given is closed, as serving would have closed it.
func TestNilArgumentsRefused(t *testing.T) {
	t.Parallel()
	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	var noContext context.Context
	cfg := mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: "127.0.0.1:0"}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("the listener given is not closed: Accept = %v", err)
			}
		})
		return ln
	}
	for _, c := range []struct {
		name, want string
		call       func() error
	}{
		{"New without ops", "mcpserver.New needs tools.Deps.Ops, the operations layer: make one with ops.New", func() error {
			_, err := mcpserver.New(tools.Deps{}, mcpserver.Options{})
			return err
		}},
		{"ServeStdio without a context", "mcpserver.ServeStdio needs a context", func() error {
			return mcpserver.ServeStdio(noContext, s, strings.NewReader(""), io.Discard, nil)
		}},
		{"ServeHTTP without a server", "mcpserver.ServeHTTP needs a server: pass the one mcpserver.New returns", func() error {
			return mcpserver.ServeHTTP(testContext(t), nil, cfg)
		}},
		{"Serve without a context", "mcpserver.Serve needs a context", func() error {
			return mcpserver.Serve(noContext, s, listen(), cfg)
		}},
		{"ServeDashboard without a context", "mcpserver.ServeDashboard needs a context", func() error {
			return mcpserver.ServeDashboard(noContext, listen(), cfg)
		}},
		{"Handler without a server", "mcpserver.Handler needs a server", func() error {
			_, _, err := mcpserver.Handler(nil, cfg, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			return err
		}},
	} {
		err := callWithoutPanic(t, c.name, c.call)
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrInvalid saying %q", c.name, err, c.want)
		}
	}
}

// callWithoutPanic returns what call returns, failing the test, with what
// was called, when it panics instead.
func callWithoutPanic(t *testing.T, what string, call func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = nil
		}
	}()
	return call()
}

// A Go service that serves the handler itself, with http.ListenAndServe,
// has no listener's address to pass: a nil one is the configured address,
// whose Host header checks then pass; with port 0 in it there is no port
// to check, and Handler says what to pass instead of panicking.
func TestHandlerWithoutListenAddress(t *testing.T) {
	t.Parallel()
	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	err := callWithoutPanic(t, "Handler of port 0 without a listen address", func() error {
		_, _, err := mcpserver.Handler(s, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: "127.0.0.1:0"}, nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "pass the listener's address") {
		t.Errorf("Handler of 127.0.0.1:0 without a listen address: %v; want an error saying to pass the listener's address", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler
	err = callWithoutPanic(t, "Handler without a listen address", func() (err error) {
		h, _, err = mcpserver.Handler(s, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: ln.Addr().String()}, nil)
		return err
	})
	if err != nil || h == nil {
		_ = ln.Close()
		t.Fatalf("Handler of %s without a listen address: %v", ln.Addr(), err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	if r := rawRequest(t, http.MethodPost, "http://"+ln.Addr().String()+mcpserver.PathMCP, "", rawInitialize); r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize at the configured address: %d %s; want 200 with a session", r.status, r.body)
	}
}
