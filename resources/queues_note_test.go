package resources_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/resources"
)

// pgbus://queues, cut to fit a response, says to read the resource of one
// queue to see one of those left out: a resource is read, not passed
// arguments.
func TestReadQueuesSaysHowToSeeTheOthers(t *testing.T) {
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	for range 45 {
		newQueue(t, s)
	}
	c := inProcess(t, deps(t, s, ops.Options{}))
	var all resources.QueuesDocument
	read(t, c, resources.URIQueues, &all)
	const want = "; read pgbus://queues/{queue}/stats for one of the others; pgbus queues on the command line lists them all"
	if all.Omitted == 0 || len(all.Notes) != 1 || !strings.HasSuffix(all.Notes[0], want) {
		t.Fatalf("pgbus://queues: %d listed, %d omitted, notes %q; want some left out and a note ending %q", len(all.Queues), all.Omitted, all.Notes, want)
	}
}
