package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A worker process registers the pgbus it runs, and the registry lists
// it: in a rolling deploy, which processes run which version. A process
// that gives none (an older pgbus) is listed without one.
func TestWorkersListTheVersionTheyRun(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // its workers would be stale ones of the shared database
	ctx := testContext(t)
	with, without := uniqueName("wv"), uniqueName("wv")
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: with, Hostname: "h", PID: 1, Queues: []string{"q"}, Concurrency: 1, Version: "pgbus v1.4.0 commit 1a2b3c4d5e6f"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterWorker(ctx, store.WorkerProcess{ID: without, Hostname: "h", PID: 2, Queues: []string{"q"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	ws, err := s.ListWorkers(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range ws {
		got[w.ID] = w.Version
	}
	if v, ok := got[with]; !ok || v != "pgbus v1.4.0 commit 1a2b3c4d5e6f" {
		t.Errorf("the registry lists %q for the process that gave its version; want it as given", v)
	}
	if v, ok := got[without]; !ok || v != "" {
		t.Errorf("the registry lists %q (found %v) for the process that gave none; want it listed without one", v, ok)
	}
}
