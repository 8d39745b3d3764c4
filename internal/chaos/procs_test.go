package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one run of a pgbus work process.
type proc struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has exited
	killed bool          // the soak killed it on purpose
	err    error         // how it ended
	log    string        // the path of its log
}

// fleet runs the pgbus work processes: slot i always has a process, but
// while a killed one waits for its restart.
type fleet struct {
	t      *testing.T
	args   []string // pgbus work and its flags
	logDir string

	mu       sync.Mutex
	slots    []*proc
	stopping bool
	kills    int
	exits    int // processes that ended on their own while working
	refused  int // processes that ended on their own in their start-up
	starts   int
}

func newFleet(t *testing.T, n int, logDir string, args ...string) *fleet {
	return &fleet{t: t, args: args, logDir: logDir, slots: make([]*proc, n)}
}

// start starts a process in slot i, logging to a file of its own.
func (f *fleet) start(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping || (f.slots[i] != nil && !exited(f.slots[i])) {
		return
	}
	log, err := os.OpenFile(filepath.Join(f.logDir, fmt.Sprintf("worker-%d-%d.log", i, f.starts)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		f.t.Errorf("worker log: %v", err)
		return
	}
	cmd := exec.Command(binary, f.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		log.Close()
		f.t.Errorf("start a worker: %v", err)
		return
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: log.Name()}
	f.slots[i], f.starts = p, f.starts+1
	go f.reap(i, p, log)
}

// reap waits for p and restarts its slot when p ended on its own.
func (f *fleet) reap(i int, p *proc, log *os.File) {
	err := p.cmd.Wait()
	log.Close()
	f.mu.Lock()
	p.err = err
	close(p.done)
	unexpected := !p.killed && !f.stopping
	switch {
	case unexpected && startFailed(p):
		f.refused++
	case unexpected:
		f.exits++
		f.t.Errorf("worker %d exited on its own while working (%v); its log is %s", i, err, p.log)
	}
	f.mu.Unlock()
	if unexpected {
		time.Sleep(500 * time.Millisecond) // not in a loop if it cannot start at all
		f.start(i)
	}
}

// startFailed tells whether p ended in its start-up: pgbus work waits for a
// server it cannot reach yet, but not for one that a restart takes away
// once it connected; it says why and exits 1, for its supervisor (here the
// fleet) to start it again. Once working it rides out restarts,
// and any other exit is a crash.
func startFailed(p *proc) bool {
	out, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return p.cmd.ProcessState.ExitCode() == 1 && strings.HasPrefix(lines[len(lines)-1], "pgbus: store: ")
}

func exited(p *proc) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the process of slot i and waits until it is gone.
func (f *fleet) kill(i int) {
	f.mu.Lock()
	p := f.slots[i]
	if p == nil || exited(p) {
		f.mu.Unlock()
		return
	}
	p.killed = true
	f.kills++
	f.mu.Unlock()
	_ = p.cmd.Process.Kill()
	<-p.done
}

// ensure starts a process in every slot that has none running.
func (f *fleet) ensure() {
	for i := range f.slots {
		f.start(i)
	}
}

// stop asks every running process to stop (SIGTERM: drain, then exit),
// waits, and fails the test for any working one that did not exit 0 (a
// race the detector found makes it exit 66). Calling it again does nothing.
func (f *fleet) stop() {
	f.mu.Lock()
	var running []*proc
	for _, p := range f.slots {
		if p != nil && !exited(p) && !f.stopping {
			running = append(running, p)
		}
	}
	f.stopping = true
	f.mu.Unlock()
	for _, p := range running {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range running {
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			f.t.Errorf("worker %d did not stop within a minute of SIGTERM; killing it", p.cmd.Process.Pid)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		// One still starting (the last restart of the server refused its
		// predecessor) gives up its start-up with exit 1.
		if p.err != nil && !startFailed(p) {
			f.t.Errorf("worker %d stopped with %v; its log is %s", p.cmd.Process.Pid, p.err, p.log)
		}
	}
}

// counts returns the kills, the exits on their own while working and
// before, and the starts so far.
func (f *fleet) counts() (kills, exits, refused, starts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills, f.exits, f.refused, f.starts
}

// cli runs the built pgbus with args against url and returns its stdout;
// err says how it failed, with its stderr, when it did not exit 0 (some
// commands print their result all the same, e.g. exit 3 for ids not found).
func cli(ctx context.Context, url string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, binary, append(args, "--database-url", url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("pgbus %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}
