package ops_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Every audit entry writes its durations as people read them and as the
// time grammar takes them back (200ms, 1m, 7d), not as nanoseconds or Go's
// 2m0s: a queue's settings, a purge's age and a send's delay alike.
func TestAuditWritesDurationsAsAges(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)
	q := uniqueName("ages")
	backoff, visibility, archive, dead := 200*time.Millisecond, 90*time.Second, time.Minute, 7*24*time.Hour
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Settings: ops.SettingsChange{
		Backoff: &backoff, VisibilityTimeout: &visibility, ArchiveRetention: &archive, DeadRetention: &dead}}); err != nil {
		t.Fatal(err)
	}
	pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{})
	if _, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, OlderThan: 2 * time.Minute, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`1`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		ops.OpQueueCreate: {`"backoff": "200ms"`, `"visibility_timeout": "1m30s"`, `"archive_retention": "1m"`, `"dead_retention": "7d"`},
		ops.OpDLQPurge:    {`"older_than": "2m"`},
		ops.OpSend:        {`"delay": "1h"`},
	}
	rows := auditRows(t, s, client)
	for _, r := range rows {
		for _, w := range want[r.Tool] {
			if !strings.Contains(r.Arguments, w) {
				t.Errorf("%s's audit arguments %s; want %s", r.Tool, r.Arguments, w)
			}
		}
		if entry := r.Arguments + r.Result; strings.Contains(entry, `m0s"`) || strings.Contains(entry, `h0m`) {
			t.Errorf("%s's audit entry writes a duration in Go's form: %s %s", r.Tool, r.Arguments, r.Result)
		}
		delete(want, r.Tool)
	}
	if len(want) != 0 {
		t.Fatalf("no audit entry of %v among %+v", want, rows)
	}
}

// Every duration of a settings change, one added later included, is
// written as an age in the audit entry, none as nanoseconds.
func TestSettingsChangeWritesEveryDurationAsAnAge(t *testing.T) {
	t.Parallel()
	var c ops.SettingsChange
	v := reflect.ValueOf(&c).Elem()
	n := 0
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == reflect.TypeFor[*time.Duration]() {
			d := 1500 * time.Millisecond
			f.Set(reflect.ValueOf(&d))
			n++
		}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) != n || n == 0 {
		t.Fatalf("settings change with its %d durations set: %s (%v)", n, raw, err)
	}
	for k, val := range fields {
		if val != "1.5s" {
			t.Errorf("%s is written as %v in %s; want 1.5s", k, val, raw)
		}
	}
}
