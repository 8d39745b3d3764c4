package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// work --until-idle on a paused queue stops once nothing of it runs,
// saying the queue is paused, and leaves its messages where they are; it
// used to wait for them for ever.
func TestWorkUntilIdleOnAPausedQueue(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "pz")
	d.ok(t, "send", "pz", `{"simulate": "ok"}`)
	d.ok(t, "queue", "pause", "pz")
	r := pgbus(t, d.env, "work", "--queue", "pz", "--handler", "demo", "--until-idle", "--poll-interval", "50ms", "--log-format", "json")
	if r.code != 0 || !strings.Contains(r.stderr, "queue is paused") {
		t.Fatalf("work --until-idle on paused pz: exit %d\n%s", r.code, r.stderr)
	}
	if st := d.stats(t, "pz"); st.Depth != 1 || st.Archived != 0 {
		t.Fatalf("paused pz after work --until-idle: %+v; want its 1 message still waiting", st)
	}
}

// The log line of a paused queue that work --until-idle does not wait for
// names the command that resumes it with the global flags the run was
// given, as every printed next step does: without them it would resume a
// queue of another database.
func TestWorkUntilIdleNamesTheResumeWithItsFlags(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "pr")
	d.ok(t, "send", "pr", `{"simulate": "ok"}`)
	d.ok(t, "queue", "pause", "pr")
	r := pgbus(t, nil, "work", "--queue", "pr", "--handler", "demo", "--until-idle", "--poll-interval", "50ms", "--log-format", "json", "--database-url", d.url)
	var line map[string]any
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "queue is paused") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
		}
	}
	next, _ := line["next"].(string)
	if r.code != 0 || !strings.HasPrefix(next, "pgbus queue resume pr --database-url ") || strings.Contains(fmt.Sprint(line["msg"]), "pgbus queue resume") {
		t.Fatalf("work --until-idle on paused pr: exit %d, the paused queue's line %v; want its next step pgbus queue resume pr with --database-url\n%s", r.code, line, r.stderr)
	}
}

// Two handlers that name one circuit breaker with different settings stop
// pgbus work and pgbus serve at start (exit 2), not only a log line of
// serve's background workers.
func TestOneBreakerTwoSettingsStopsTheStart(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := writeFile(t, "pgbus.yaml", `
queues:
  first:
    handler: {type: exec, command: [/bin/true], breaker: {failure_threshold: 2}}
  second:
    handler: {type: exec, command: [/bin/true], breaker: {failure_threshold: 9}}
`)
	for _, args := range [][]string{{"work", "--for", "5s"}, {"serve"}} {
		msg := d.fails(t, 2, append([]string{"--config", cfg}, args...)...)
		if !strings.Contains(msg, "configured twice with different settings") {
			t.Errorf("pgbus %v: %q; want the conflicting breaker named", args, msg)
		}
	}
}
