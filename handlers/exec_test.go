//go:build unix

package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/exectest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// workScript is run by /bin/sh for each job: the payload, read from stdin,
// chooses what it does.
const workScript = `payload=$(cat)
out="$OUT_DIR/$PGBUS_MSG_ID"
case "$payload" in
*'"ok"'*)
  printf '%s' "$payload" > "$out.stdin"
  env | grep -E '^(PGBUS_|EXTRA_)' | sort > "$out.env"
  echo "all done"
  exit 0 ;;
*'"retry"'*)
  echo "attempt $PGBUS_ATTEMPT: downstream busy" >&2
  [ "$PGBUS_ATTEMPT" -lt 3 ] && exit 75
  exit 0 ;;
*'"bad"'*)
  i=1
  while [ $i -le 30 ]; do echo "validation line $i" >&2; i=$((i+1)); done
  exit 3 ;;
*'"discard"'*)
  echo "order already cancelled" >&2
  exit 4 ;;
*'"six"'*)
  echo "locked, try later" >&2
  exit 6 ;;
*'"flood"'*)
  head -c 5000000 /dev/zero | tr '\0' 'x'
  seq 1 200000 | sed 's/^/err line /' >&2
  exit 1 ;;
esac
echo "unknown payload $payload" >&2
exit 2
`

// hangScript writes its process group id (complete, or not at all), then
// starts a child and waits for it: only killing the process group ends
// both. A run killed before it wrote the id started no child.
const hangScript = `echo $$ > "$OUT_DIR/pgid.tmp.$$" && mv "$OUT_DIR/pgid.tmp.$$" "$OUT_DIR/$PGBUS_MSG_ID.$PGBUS_ATTEMPT.pgid"
sleep 60 &
cat > /dev/null
wait
`

// writeScript writes body to dir/name through a child process, so that no
// process this test binary forks meanwhile (tests run in parallel)
// inherits a descriptor that has it open for writing: running the file
// while one does fails with "text file busy", not as the test expects.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	exectest.WriteFile(t, path, body, 0o644)
	return path
}

// groupAlive returns the processes of the group that are alive (zombies
// waiting for a reaper that never comes do not count where /proc tells).
func groupAlive(t *testing.T, pgid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		// No /proc (macOS): ask the kernel whether the group has a
		// member; a zombie counts as alive here.
		if syscall.Kill(-pgid, 0) == nil {
			return []string{fmt.Sprintf("a member of group %d", pgid)}
		}
		return nil
	}
	var alive []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			alive = append(alive, strings.TrimSpace(s[:strings.LastIndexByte(s, ')')+1]))
		}
	}
	return alive
}

// readPGID returns the process group id a hangScript run wrote to path,
// and false when the run was killed before it wrote one.
func readPGID(t *testing.T, path string) (int, bool) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("process group file %s holds %q: %v", path, raw, err)
	}
	return n, true
}

// waitGroupGone fails the test unless the process group pgid ends.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	pgtest.Eventually(t, time.Minute, fmt.Sprintf("the processes of group %d to end", pgid), func() bool { return len(groupAlive(t, pgid)) == 0 })
}

// The exec handler on an engine client and a real PostgreSQL: exit codes
// become success, retry, discard, an on_exit policy and dead letters (a
// command a signal killed: TestExecHandlerRetriesKilledCommands); a
// hanging command is killed with its process group at its timeout; a
// command that floods its output neither blocks nor bloats the message.
func TestExecHandlerExitCodes(t *testing.T) {
	s := sharedStore(t)
	dir := t.TempDir()
	work := writeScript(t, dir, "work.sh", workScript)
	hang := writeScript(t, dir, "hang.sh", hangScript)
	mainBreaker, hangBreaker := randomName("exec_test"), randomName("exec_test")
	forgetBreaker(t, s, mainBreaker)
	forgetBreaker(t, s, hangBreaker)

	workFn, workOpts := mustBuild(t, specFromYAML(t, fmt.Sprintf(`
type: exec
command: [/bin/sh, %s]
timeout: 20s
env: {OUT_DIR: %s, EXTRA_MODE: live}
discard_exit_codes: [4]
on_exit:
  6: {action: retry, max_retries: 2, backoff: 50ms, jitter: 0}
breaker: {name: %s}
`, work, dir, mainBreaker)))
	hangFn, hangOpts := mustBuild(t, specFromYAML(t, fmt.Sprintf(`
type: exec
command: [/bin/sh, %s]
timeout: 300ms
env: {OUT_DIR: %s}
breaker: {name: %s}
`, hang, dir, hangBreaker)))
	if hangOpts.Timeout != 300*time.Millisecond || workOpts.Timeout != 20*time.Second {
		t.Fatalf("timeouts %s and %s", hangOpts.Timeout, workOpts.Timeout)
	}

	// The worker's own PGBUS_ variables are not passed on.
	t.Setenv("PGBUS_QUEUES", "orders")
	q := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	c := quickClient(t, s, q, 4)
	c.Handle("work", workFn, workOpts)
	c.Handle("hang", hangFn, hangOpts)
	pgtest.Start(t, c)

	ids := map[string]int64{}
	for _, kase := range []string{"ok", "retry", "bad", "discard", "six", "flood", "other"} {
		ids[kase] = pgtest.Send(t, c, q, map[string]string{"case": kase}, engine.SendOptions{Kind: "work"})
	}
	ids["hang"] = pgtest.Send(t, c, q, map[string]string{"case": "hang"}, engine.SendOptions{Kind: "hang"})
	pgtest.Eventually(t, 30*time.Second, "every message to settle", func() bool { return pgtest.Live(t, s, q) == 0 })

	archived := archivedOf(t, s, q)
	blocks, dlqIDs := deadBlocksOf(t, s, q)
	dlq := store.DLQName(q)

	// 0: success, with the payload on stdin and the job in the environment.
	if _, ok := archived[ids["ok"]]; !ok {
		t.Errorf("ok: not archived")
	}
	okOut := filepath.Join(dir, strconv.FormatInt(ids["ok"], 10))
	if raw, err := os.ReadFile(okOut + ".stdin"); err != nil || !json.Valid(raw) || !strings.Contains(string(raw), `"case": "ok"`) {
		t.Errorf("ok: stdin %q (%v); want the payload", raw, err)
	}
	env, _ := os.ReadFile(okOut + ".env")
	for _, want := range []string{
		"PGBUS_QUEUE=" + q, "PGBUS_MSG_ID=" + strconv.FormatInt(ids["ok"], 10), "PGBUS_KIND=work",
		"PGBUS_ATTEMPT=1", fmt.Sprintf("PGBUS_IDEMPOTENCY_KEY=%s:%d", q, ids["ok"]), "EXTRA_MODE=live",
	} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("ok: environment\n%s\nlacks %s", env, want)
		}
	}
	if strings.Contains(string(env), "PGBUS_QUEUES") {
		t.Errorf("ok: environment\n%s\nhas the worker's PGBUS_QUEUES", env)
	}
	// 75: retried on the queue's backoff until it succeeds.
	if a, ok := archived[ids["retry"]]; !ok || a.ReadCount != 3 {
		t.Errorf("retry: archived %v after %d runs; want after 3", ok, a.ReadCount)
	}
	if fs := failuresOf(t, s, q, ids["retry"]); len(fs) != 2 || fs[0].Class != "exec.exit_75" || fs[0].delay() != 100*time.Millisecond ||
		!strings.Contains(fs[1].Message, "attempt 2: downstream busy") {
		t.Errorf("retry: failures %+v; want 2 of exec.exit_75, after the queue's backoff, quoting stderr", fs)
	}
	// Other codes: dead-lettered at once, with the last lines of stderr.
	checkDeadBlock(t, blocks[ids["bad"]], "bad", store.ReasonNonRetryable, 1, "exec.exit_3")
	if msg, _ := blocks[ids["bad"]]["error_message"].(string); !strings.Contains(msg, "exit code 3") ||
		!strings.Contains(msg, "validation line 30") || !strings.Contains(msg, "validation line 21") || strings.Contains(msg, "validation line 20\n") {
		t.Errorf("bad: message %q; want the exit code and the last 10 lines of stderr", msg)
	}
	checkDeadBlock(t, blocks[ids["other"]], "other", store.ReasonNonRetryable, 1, "exec.exit_2")
	// discard_exit_codes: archived with the failure recorded.
	if a, ok := archived[ids["discard"]]; !ok || a.Headers[store.HeaderDiscarded] == nil {
		t.Errorf("discard: archived %v with headers %v; want discarded", ok, a.Headers)
	}
	if fs := failuresOf(t, s, q, ids["discard"]); len(fs) != 1 || fs[0].Class != "exec.exit_4" || !strings.Contains(fs[0].Message, "order already cancelled") {
		t.Errorf("discard: failures %+v", fs)
	}
	// on_exit: its own retry policy, 2 runs 50ms apart.
	checkDeadBlock(t, blocks[ids["six"]], "six", store.ReasonMaxRetriesExceeded, 2, "exec.exit_6")
	if fs := failuresOf(t, s, dlq, dlqIDs[ids["six"]]); len(fs) != 2 || fs[0].delay() != 50*time.Millisecond {
		t.Errorf("six: failures %+v; want 2, 50ms apart", fs)
	}
	// A flood of output: bounded in the message, no deadlock.
	checkDeadBlock(t, blocks[ids["flood"]], "flood", store.ReasonNonRetryable, 1, "exec.exit_1")
	if fs := failuresOf(t, s, dlq, dlqIDs[ids["flood"]]); len(fs) != 1 || len(fs[0].Message) > 1000 ||
		!strings.Contains(fs[0].Message, "err line 200000") || !strings.Contains(fs[0].Message, "of 3088895 bytes") {
		t.Errorf("flood: failures %+v; want one message of at most 1000 bytes ending with the last stderr lines", fs)
	}
	// The hanging command: each attempt timed out, retryable, until its
	// retries ran out; no process of any attempt is left.
	checkDeadBlock(t, blocks[ids["hang"]], "hang", store.ReasonMaxRetriesExceeded, 3, handlers.ClassExecTimeout)
	fs := failuresOf(t, s, dlq, dlqIDs[ids["hang"]])
	if len(fs) != 3 {
		t.Errorf("hang: failures %+v; want 3", fs)
	}
	// An attempt killed before it wrote its group started no child; that
	// the others leave nothing is checked here, and that a started child
	// dies with its group by TestExecHandlerTimeoutKillsProcessGroup.
	for attempt := 1; attempt <= 3; attempt++ {
		if pgid, ok := readPGID(t, filepath.Join(dir, fmt.Sprintf("%d.%d.pgid", ids["hang"], attempt))); ok {
			waitGroupGone(t, pgid)
		}
	}
}

func execJob(id int64, payload string) *engine.Job {
	return &engine.Job{Queue: "q", ID: id, Kind: "k", Attempt: 1, Payload: json.RawMessage(payload), IdempotencyKey: fmt.Sprintf("q:%d", id)}
}

// A command that hangs is killed at its timeout, its children included.
func TestExecHandlerTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hang := writeScript(t, dir, "hang.sh", hangScript)
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Timeout: handlers.Duration(300 * time.Millisecond),
		Options: map[string]any{"command": []any{"/bin/sh", hang}, "env": map[string]any{"OUT_DIR": dir}}})
	// Until a run got to start its child before the timeout: on a loaded
	// machine the shell may not even start within 300ms.
	var err error
	var pgid int
	id := int64(40)
	pgtest.Eventually(t, 2*time.Minute, "a run of the command that started its child", func() bool {
		id++
		// The command sleeps for a minute: only the timeout ends it sooner.
		err = fn(context.Background(), execJob(id, `{}`))
		var started bool
		pgid, started = readPGID(t, filepath.Join(dir, fmt.Sprintf("%d.1.pgid", id)))
		return started
	})
	var ee *handlers.ExitError
	if _, plain := err.(*handlers.ExitError); !plain || !errors.As(err, &ee) || !ee.TimedOut || engine.ErrorClass(err) != handlers.ClassExecTimeout {
		t.Fatalf("error %v (%T); want a plain (retryable) exec.timeout ExitError", err, err)
	}
	if !strings.Contains(err.Error(), "timeout 300ms") {
		t.Errorf("message %q", err.Error())
	}
	waitGroupGone(t, pgid)
	if err := syscall.Kill(-pgid, 0); err == nil {
		// Only zombies may be left, for an init that does not reap.
		t.Logf("process group %d holds only zombies", pgid)
	}
}

// Megabytes of output do not block the command, and the message keeps
// only the end of stderr.
func TestExecHandlerBoundedOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := writeScript(t, dir, "work.sh", workScript)
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
		Options: map[string]any{"command": []any{"/bin/sh", work}, "env": map[string]any{"OUT_DIR": dir}}})
	err := fn(context.Background(), execJob(1, `{"case": "flood"}`))
	var ee *handlers.ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 1 || ee.StdoutBytes != 5_000_000 || ee.StderrBytes != 3_088_895 || ee.OutputName != "stderr" {
		t.Fatalf("error %v %+v; want exit code 1 with 5000000 bytes of stdout and 3088895 of stderr", err, ee)
	}
	if lines := strings.Split(ee.Output, "\n"); len(lines) > 10 || len(ee.Output) > 700 || lines[len(lines)-1] != "err line 200000" {
		t.Errorf("output %q; want at most 10 lines and 700 bytes, ending with the last line", ee.Output)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("message of %d bytes, want at most 1000", len(err.Error()))
	}
	// stdout is quoted when stderr is empty.
	quiet := writeScript(t, dir, "quiet.sh", "cat >/dev/null; head -c 100000 /dev/zero | tr '\\0' 'y'; echo; echo final words; exit 9\n")
	fn, _ = mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": []any{"/bin/sh", quiet}, "retry_unknown_exit_codes": true}})
	err = fn(context.Background(), execJob(2, `{}`))
	if _, plain := err.(*handlers.ExitError); !plain || !errors.As(err, &ee) || ee.OutputName != "stdout" || !strings.HasSuffix(ee.Output, "final words") || len(ee.Output) > 700 {
		t.Errorf("error %v (%T); want a plain (retry_unknown_exit_codes) ExitError quoting the end of stdout", err, err)
	}
	// A payload larger than a pipe's buffer, which the command ignores.
	ignore := writeScript(t, dir, "ignore.sh", "exit 0\n")
	fn, _ = mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": []any{"/bin/sh", ignore}}})
	big, _ := json.Marshal(map[string]string{"blob": strings.Repeat("z", 1<<20)})
	if err := fn(context.Background(), execJob(3, string(big))); err != nil {
		t.Errorf("a command that does not read its stdin: %v", err)
	}
}

// Defaults and the engine options a block turns into.
func TestExecBuildDefaults(t *testing.T) {
	t.Parallel()
	_, opts := mustBuild(t, specFromYAML(t, "type: exec\ncommand: [sh, -c, 'exit 0']"))
	want := store.BreakerConfig{Name: opts.Breaker.Name, FailureThreshold: 5, CoolOff: 10 * time.Second, MaxCoolOff: 5 * time.Minute}
	if opts.Breaker == nil || *opts.Breaker != want || opts.Timeout != 30*time.Second || len(opts.Policies) != 0 {
		t.Errorf("options %+v (breaker %+v); want timeout 30s, breaker %+v, no policies", opts, opts.Breaker, want)
	}
	// The breaker is the command's: the same interpreter running other
	// code is another downstream, whose failures must not hold this one's
	// jobs; the same command line, in another worker process, shares it.
	breakerOf := func(yaml string) string {
		t.Helper()
		_, o := mustBuild(t, specFromYAML(t, yaml))
		return o.Breaker.Name
	}
	same := breakerOf("type: exec\ncommand: [sh, -c, 'exit 0']")
	other := breakerOf("type: exec\ncommand: [sh, -c, 'exit 75']")
	alone := breakerOf("type: exec\ncommand: [true]")
	if !regexp.MustCompile(`^exec:sh#[0-9a-f]{8}$`).MatchString(same) || same != opts.Breaker.Name || other == same || alone != "exec:true" {
		t.Errorf("breakers %q, %q (the same command), %q (other code), %q (no arguments); want exec:sh#<8 hex> shared by the same command alone, exec:true", opts.Breaker.Name, same, other, alone)
	}
	fn, opts := mustBuild(t, specFromYAML(t, `
type: exec
command: [/bin/sh, -c, 'exit $(cat)']
retry_exit_codes: []
on_exit: {75: dead_letter, 9: {action: retry, max_retries: 7}}
breaker: {enabled: false}
`))
	if opts.Breaker != nil || len(opts.Policies) != 2 || opts.Policies[0].Class != "exec.exit_9" || opts.Policies[0].Retry != nil || opts.Policies[0].MaxRetries != 7 ||
		opts.Policies[1].Class != "exec.exit_75" || opts.Policies[1].Action != engine.ActionDeadLetter {
		t.Errorf("options %+v; want no breaker and the policies of 9 and 75", opts)
	}
	// Exit codes the handler leaves to an on_exit policy come back plain.
	for _, code := range []int{9, 75} {
		err := fn(context.Background(), execJob(1, strconv.Itoa(code)))
		if _, plain := err.(*handlers.ExitError); !plain || engine.ErrorClass(err) != fmt.Sprintf("exec.exit_%d", code) {
			t.Errorf("exit %d: %v (%T); want a plain ExitError for the policy", code, err, err)
		}
	}
	if err := fn(context.Background(), execJob(1, "0")); err != nil {
		t.Errorf("exit 0: %v", err)
	}
}

// Bad blocks are rejected with the key and the reason, by Build and by
// Check; what only this machine lacks (the program, its dir), by Build
// alone, as a machine that runs no worker need not have it.
func TestExecBadConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plainFile := writeScript(t, dir, "notexec.sh", "exit 0\n")
	for _, tc := range []struct {
		name    string
		yaml    string
		options map[string]any
		timeout time.Duration
		key     string
		reason  string
		// onDisk: a problem of this machine, which Check does not look for.
		onDisk bool
	}{
		{name: "no command", yaml: "retry_exit_codes: [75]", key: "command:", reason: "missing"},
		{name: "empty command", yaml: "command: []", key: "command:", reason: "missing"},
		{name: "shell string", yaml: "command: echo hi", key: "command:", reason: "as a list"},
		{name: "empty program", options: map[string]any{"command": []any{""}}, key: "command:", reason: "empty"},
		{name: "not on PATH", yaml: "command: [pgbus-no-such-program-xyz]", key: "command:", reason: "not found on PATH", onDisk: true},
		{name: "no such file", yaml: "command: [/nonexistent/bin/charge]", key: "command:", reason: "does not exist", onDisk: true},
		{name: "relative", yaml: "command: [./charge.sh]", key: "command:", reason: "relative path"},
		{name: "directory", yaml: "command: [" + dir + "]", key: "command:", reason: "is a directory", onDisk: true},
		{name: "not executable", yaml: "command: [" + plainFile + "]", key: "command:", reason: "not executable", onDisk: true},
		{name: "command map", yaml: "command: {a: b}", key: "command:", reason: "expected a list"},
		{name: "negative timeout", options: map[string]any{"command": []any{"/bin/sh"}}, timeout: -time.Second, key: "timeout:", reason: "negative"},
		{name: "code 256", yaml: "command: [/bin/sh]\nretry_exit_codes: [256]", key: "retry_exit_codes:", reason: "out of range 1..255"},
		{name: "negative code", yaml: "command: [/bin/sh]\ndiscard_exit_codes: [-1]", key: "discard_exit_codes:", reason: "out of range 1..255"},
		{name: "code 0", yaml: "command: [/bin/sh]\nretry_exit_codes: [0]", key: "retry_exit_codes:", reason: "0 is success"},
		{name: "code text", yaml: "command: [/bin/sh]\nretry_exit_codes: [soon]", key: "retry_exit_codes:", reason: `"soon" is not a whole number`},
		{name: "code fraction", yaml: "command: [/bin/sh]\nretry_exit_codes: [75.5]", key: "retry_exit_codes:", reason: `"75.5" is not a whole number`},
		{name: "code twice", yaml: "command: [/bin/sh]\nretry_exit_codes: [75, 75]", key: "retry_exit_codes:", reason: "listed twice"},
		{name: "code in two lists", yaml: "command: [/bin/sh]\ndiscard_exit_codes: [75]", key: "discard_exit_codes:", reason: "also in retry_exit_codes"},
		{name: "on_exit conflict", yaml: "command: [/bin/sh]\non_exit: {75: discard}", key: "on_exit.75:", reason: "also in retry_exit_codes"},
		{name: "on_exit key", yaml: "command: [/bin/sh]\non_exit: {abc: retry}", key: "on_exit.abc:", reason: "not an exit code"},
		{name: "on_exit range", yaml: "command: [/bin/sh]\non_exit: {300: retry}", key: "on_exit.300:", reason: "out of range 1..255"},
		// A code is read as written, not as YAML reads a number: 0x3 is no
		// exit code, 0o11 not 9.
		{name: "on_exit in hex", yaml: "command: [/bin/sh]\non_exit: {0x3: retry}", key: "on_exit.0x3:", reason: "not an exit code"},
		{name: "on_exit in octal", yaml: "command: [/bin/sh]\non_exit: {0o11: retry}", key: "on_exit.0o11:", reason: "not an exit code"},
		{name: "on_exit action", yaml: "command: [/bin/sh]\non_exit: {6: later}", key: "on_exit.6:", reason: `unknown action "later"`},
		{name: "on_exit hint", yaml: "command: [/bin/sh]\non_exit: {6: retry_after_hint}", key: "on_exit.6:", reason: "no retry hint"},
		{name: "on_exit retries", yaml: "command: [/bin/sh]\non_exit: {6: {action: retry, max_retries: -3}}", key: "on_exit.6.max_retries:", reason: "out of range"},
		{name: "reserved env", yaml: "command: [/bin/sh]\nenv: {PGBUS_QUEUE: x}", key: "env.PGBUS_QUEUE:", reason: "reserved"},
		{name: "env name", yaml: "command: [/bin/sh]\nenv: {1BAD: x}", key: "env.1BAD:", reason: "not a variable name"},
		{name: "no dir", yaml: "command: [/bin/sh]\ndir: /nonexistent/dir", key: "dir:", reason: "does not exist", onDisk: true},
		{name: "dir is a file", yaml: "command: [/bin/sh]\ndir: " + plainFile, key: "dir:", reason: "not a directory", onDisk: true},
		{name: "NUL in dir", yaml: "command: [/bin/sh]\ndir: \"/tmp\\0x\"", key: "dir:", reason: "the path holds a NUL character"},
		{name: "zero threshold", yaml: "command: [/bin/sh]\nbreaker: {failure_threshold: 0}", key: "breaker.failure_threshold:", reason: "out of range 1..10000"},
		{name: "bad values of a breaker turned off", yaml: "command: [/bin/sh]\nbreaker: {enabled: false, failure_threshold: -3, cool_off: 1ms}", key: "breaker.failure_threshold:", reason: "out of range 1..10000"},
		{name: "negative max cool-off", yaml: "command: [/bin/sh]\nbreaker: {max_cool_off: -1m}", key: "breaker.max_cool_off:", reason: "negative"},
		{name: "long breaker name", options: map[string]any{"command": []any{"/bin/sh"}, "breaker": map[string]any{"name": strings.Repeat("b", 201)}}, key: "breaker.name:", reason: "longer than 200"},
		{name: "unknown key", yaml: "command: [/bin/sh]\nargs: [-c]", key: "args:", reason: "unknown option; the options here are breaker, command, dir, discard_exit_codes, env, on_exit, retry_exit_codes, retry_signals, retry_unknown_exit_codes (and type and timeout, which every handler takes)"},
		{name: "bool text", yaml: "command: [/bin/sh]\nretry_unknown_exit_codes: sometimes", key: "retry_unknown_exit_codes:", reason: "true or false"},
		{name: "signals text", yaml: "command: [/bin/sh]\nretry_signals: no-thanks", key: "retry_signals:", reason: "true or false"},
		{name: "timeout typo", yaml: "command: [/bin/sh]\ntmeout: 30s", key: "tmeout:", reason: "(and type and timeout, which every handler takes)"},
		{name: "75 discarded, retried by default", yaml: "command: [/bin/sh]\ndiscard_exit_codes: [75]", key: "discard_exit_codes:", reason: "where it is by default (EX_TEMPFAIL); give each code one outcome: set retry_exit_codes without it, such as retry_exit_codes: []"},
		{name: "75 on_exit, retried by default", yaml: "command: [/bin/sh]\non_exit: {75: discard}", key: "on_exit.75:", reason: "set retry_exit_codes without it"},
		{name: "75 in both lists given", yaml: "command: [/bin/sh]\nretry_exit_codes: [75]\ndiscard_exit_codes: [75]", key: "discard_exit_codes:", reason: "exit code 75 is also in retry_exit_codes; give each code one outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec handlers.Spec
			if tc.yaml != "" {
				spec = specFromYAML(t, "type: exec\n"+tc.yaml)
			} else {
				spec = handlers.Spec{Options: tc.options, Timeout: handlers.Duration(tc.timeout)}
			}
			spec.Type = handlers.TypeExec
			_, _, err := handlers.Build(spec)
			if err == nil {
				t.Fatalf("built; want an error about %s", tc.key)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "handler type exec: "+tc.key) || !strings.Contains(msg, tc.reason) {
				t.Errorf("error %q; want it to start with %q and say %q", msg, "handler type exec: "+tc.key, tc.reason)
			}
			checkErr := handlers.Check(spec)
			switch {
			case tc.onDisk && checkErr != nil:
				t.Errorf("Check looked at this machine: %v", checkErr)
			case !tc.onDisk && (checkErr == nil || checkErr.Error() != msg):
				t.Errorf("Check: %v; want Build's error %q", checkErr, msg)
			}
		})
	}
}

// A command written as one string that needs a shell to run as written
// (a pipeline, a list, a redirection) is refused with a list that gives it
// to one: given as the command, that list says and exits what a shell
// running the string does.
func TestOneStringCommandSuggestionRuns(t *testing.T) {
	t.Parallel()
	const command = `printf '%s\n' one two | tail -n 1 >&2; echo listed >&2 && exit 3`
	err := handlers.Check(handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": command}})
	_, list, found := strings.Cut(fmt.Sprint(err), "such as ")
	var suggested []any
	if !found || json.NewDecoder(strings.NewReader(list)).Decode(&suggested) != nil {
		t.Fatalf("error %v; want it to suggest a list", err)
	}
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": suggested}})
	err = fn(context.Background(), execJob(1, `{}`))
	var ee *handlers.ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || ee.Output != "two\nlisted" {
		t.Fatalf("the suggested %v ran to %v; want exit code 3 after saying two, then listed", suggested, err)
	}
}

// A command written as one string whose words a shell expands where no
// program would (a pattern, a ~ starting a word) is given to a shell in
// the list suggested, which then runs as the string would in a shell; a
// pattern quoted or escaped is no pattern, and neither is a ? or [ in a
// URL or a word with an =: they get the plain list.
func TestOneStringCommandWithPatternsSuggestsAShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for command, shell := range map[string]bool{
		"cat " + dir + "/*.txt":                    true,
		"cat " + dir + "/?.txt":                    true,
		"cat " + dir + "/[ab].txt":                 true,
		"ls -d ~":                                  true,
		"cat " + dir + "/a.txt":                    false,
		"echo '*.txt' \\? \"[ab]\" a~":             false,
		"echo https://h.example/x?sig=s4 -d a[]=1": false,
	} {
		err := handlers.Check(handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": command}})
		_, list, found := strings.Cut(fmt.Sprint(err), "such as ")
		var suggested []any
		if !found || json.NewDecoder(strings.NewReader(list)).Decode(&suggested) != nil {
			t.Fatalf("%s: error %v; want it to suggest a list", command, err)
		}
		if got := suggested[0] == "/bin/sh"; got != shell {
			t.Errorf("%s: suggested %v; want a shell's list %v", command, suggested, shell)
			continue
		}
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": suggested}})
		if err := fn(context.Background(), execJob(1, `{}`)); err != nil {
			t.Errorf("%s: the suggested %v failed: %v", command, suggested, err)
		}
	}
}

// What a command leaves running in its group is killed once the command
// exited, whether it succeeded or failed, and whether the leftover still
// holds its output or not: a failed attempt's leftovers would otherwise
// run on beside its retries, and a succeeded one's pile up.
func TestExecHandlerKillsWhatItLeavesRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	leave := writeScript(t, dir, "leave.sh", `echo $$ > "$OUT_DIR/pgid.tmp.$$" && mv "$OUT_DIR/pgid.tmp.$$" "$OUT_DIR/$PGBUS_MSG_ID.pgid"
if [ "$2" = quiet ]; then sleep 600 >/dev/null 2>&1 </dev/null & else sleep 600 & fi
echo "giving up with $1" >&2
exit $1
`)
	for i, c := range []struct {
		code     int
		leftover string
	}{{3, "holding the output"}, {0, "holding the output"}, {3, "quiet"}, {0, "quiet"}} {
		code, id := c.code, int64(i+1)
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
			Options: map[string]any{"command": []any{"/bin/sh", leave, strconv.Itoa(code), c.leftover}, "env": map[string]any{"OUT_DIR": dir}}})
		err := fn(context.Background(), execJob(id, `{}`))
		pgid, started := readPGID(t, filepath.Join(dir, fmt.Sprintf("%d.pgid", id)))
		if !started {
			t.Fatalf("exit %d: the command wrote no process group id (error %v)", code, err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		var ee *handlers.ExitError
		switch {
		case code == 0 && err != nil:
			t.Errorf("exit 0: %v, want success", err)
		case code != 0 && (!errors.As(err, &ee) || ee.ExitCode != code || ee.Output != fmt.Sprintf("giving up with %d", code)):
			t.Errorf("exit %d: %v; want an ExitError with its code and stderr", code, err)
		}
		waitGroupGone(t, pgid)
	}
}
