package runner_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
)

// A configuration file that drops a key keeps the queue's stored value,
// not the default: Prepare says which settings were kept, with both
// values, and says nothing when the file gives them all or the stored
// ones are the defaults.
func TestPrepareNamesTheSettingsAFileNoLongerGives(t *testing.T) {
	ctx := pgtest.Context(t)
	_, svc, q := setUp(t) // declared with max_retries 2
	prepare := func(q config.WorkQueue) string {
		t.Helper()
		var logs pgtest.SyncBuffer
		if err := runner.Prepare(ctx, svc, []config.WorkQueue{q}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	if logs := prepare(q); strings.Contains(logs, "keeps settings") {
		t.Fatalf("the file gives every setting changed; logged:\n%s", logs)
	}
	dropped := q
	dropped.Settings = config.Settings{}
	logs := prepare(dropped)
	if !strings.Contains(logs, "keeps settings set before") || !strings.Contains(logs, `kept="max_retries 2, default 5"`) || !strings.Contains(logs, "queue="+q.Name) {
		t.Fatalf("a file without max_retries: logged\n%s\nwant the queue kept max_retries 2, default 5", logs)
	}
	stats, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q.Name, NoArchive: true})
	if err != nil || stats.Queues[0].Settings.MaxRetries != 2 {
		t.Fatalf("stored settings after the file dropped the key: %+v, %v; want max_retries still 2", stats, err)
	}
	fresh := config.WorkQueue{Name: pgtest.Name("fresh"), Declared: true, Handler: q.Handler}
	if logs := prepare(fresh); strings.Contains(logs, "keeps settings") {
		t.Fatalf("a new queue at the defaults: logged\n%s", logs)
	}
	if logs := prepare(fresh); strings.Contains(logs, "keeps settings") {
		t.Fatalf("a queue whose stored settings are the defaults: logged\n%s", logs)
	}
}
