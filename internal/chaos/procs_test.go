package chaos_test

import (
	"bytes"
	"context"
	"errors"
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
	exits    int // processes that ended without being killed or stopped
	starts   int
}

func newFleet(t *testing.T, n int, logDir string, args ...string) *fleet {
	return &fleet{t: t, args: args, logDir: logDir, slots: make([]*proc, n)}
}

// start starts a process in slot i, logging to its own file.
func (f *fleet) start(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping || (f.slots[i] != nil && !exited(f.slots[i])) {
		return
	}
	log, err := os.OpenFile(filepath.Join(f.logDir, fmt.Sprintf("worker-%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		f.t.Errorf("worker log: %v", err)
		return
	}
	cmd := exec.Command(binary, f.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		f.t.Errorf("start a worker: %v", err)
		return
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	f.slots[i], f.starts = p, f.starts+1
	go f.reap(i, p, log)
}

// reap waits for p and restarts its slot when p ended on its own: the soak
// counts such exits, and the workers must keep running.
func (f *fleet) reap(i int, p *proc, log *os.File) {
	err := p.cmd.Wait()
	log.Close()
	f.mu.Lock()
	close(p.done)
	unexpected := !p.killed && !f.stopping
	if unexpected {
		f.exits++
	}
	f.mu.Unlock()
	if unexpected {
		f.t.Logf("worker %d exited on its own (%v); restarting it. Its log ends:\n%s", i, err, logTail(log.Name()))
		time.Sleep(500 * time.Millisecond) // not in a loop if it cannot start at all
		f.start(i)
	}
}

// logTail returns the last lines of a log file.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], "\n")
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

// stop asks every process to stop (SIGTERM: drain, then exit) and waits.
func (f *fleet) stop() {
	f.mu.Lock()
	f.stopping = true
	procs := append([]*proc{}, f.slots...)
	f.mu.Unlock()
	for _, p := range procs {
		if p != nil && !exited(p) {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range procs {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			f.t.Errorf("worker %d did not stop within a minute of SIGTERM; killing it", p.cmd.Process.Pid)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// counts returns the kills, the exits on their own and the starts so far.
func (f *fleet) counts() (kills, exits, starts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills, f.exits, f.starts
}

// cli runs the built pgbus with args against url and returns its stdout and
// exit code; err is set when it could not run or was ended by ctx.
func cli(ctx context.Context, url string, args ...string) ([]byte, int, error) {
	cmd := exec.CommandContext(ctx, binary, append(args, "--database-url", url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil {
		return stdout.Bytes(), exit.ExitCode(), nil
	}
	if err != nil {
		return stdout.Bytes(), -1, fmt.Errorf("pgbus %v: %w: %s", args, err, stderr.Bytes())
	}
	return stdout.Bytes(), 0, nil
}
