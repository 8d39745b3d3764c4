//go:build unix

package handlers

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
)

// A worker out of file descriptors backs off: the first job whose
// command cannot start goes back for shortSnooze, saying why; the jobs
// that come meanwhile go back until then untried, and without a reason
// for the log to repeat; each failure once the wait passed doubles it, up
// to shortSnoozeMax; a command that starts ends it. Every job used to try,
// fail and go back every 5 seconds, the whole queue read again and again,
// and the log said so every minute.
func TestWorkerShortOfFilesBacksOff(t *testing.T) {
	h, _, err := newExecHandler(Spec{Type: TypeExec, Options: map[string]any{"command": []any{"/bin/sh", "-c", "cat >/dev/null"}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	emfile := &fs.PathError{Op: "fork/exec", Path: h.path, Err: syscall.EMFILE}
	t0 := time.Now()
	delay := func(err error) time.Duration {
		t.Helper()
		d, _, ok := engine.SnoozeOf(err)
		if !ok {
			t.Fatalf("%v is no snooze", err)
		}
		return d
	}
	reason := func(err error) error {
		_, r, _ := engine.SnoozeOf(err)
		return r
	}
	fail := func(at time.Duration) error {
		t.Helper()
		if held := h.short.held(t0.Add(at)); held != nil {
			return held
		}
		e := &StartError{Command: h.argv0, Err: emfile}
		e.Problem, _ = workerShort(emfile)
		return h.short.failed(e, t0.Add(at))
	}

	first := fail(0)
	var se *StartError
	if d := delay(first); d != shortSnooze || !errors.As(reason(first), &se) || !strings.Contains(first.Error(), "ulimit -n") || !strings.Contains(first.Error(), "twice as long") {
		t.Fatalf("the first failure: %v, back for %s; want back for %s, saying why and how it backs off", first, d, shortSnooze)
	}
	if held := h.short.held(t0.Add(time.Second)); held == nil || delay(held) != shortSnooze-time.Second || reason(held) != nil {
		t.Errorf("a job a second later: %v; want it back untried until the wait ends, with no reason to log again", held)
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		at := h.short.until.Sub(t0) // the wait before ends
		err := fail(at)
		if delay(err) != want || reason(err) != nil {
			t.Errorf("failure %d, at %s: %v, back for %s; want back for %s, with no reason to log again", i+2, at, err, delay(err), want)
		}
	}
	for range 20 { // each as the wait before ends
		h.short.failed(&StartError{Err: emfile}, h.short.until)
	}
	if h.short.wait != shortSnoozeMax {
		t.Errorf("after many failures the wait is %s; want at most %s", h.short.wait, shortSnoozeMax)
	}
	h.short.started()
	if held := h.short.held(t0.Add(time.Second)); held != nil {
		t.Errorf("once a command started, a job is held: %v", held)
	}
	if err := fail(time.Hour * 100); delay(err) != shortSnooze || !errors.As(reason(err), &se) {
		t.Errorf("the first failure after a command started: %v, back for %s; want %s again, saying why", err, delay(err), shortSnooze)
	}
}
