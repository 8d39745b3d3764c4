package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// snoozeCounter is an observer that counts the snoozes of each job, and
// the jobs that succeeded.
type snoozeCounter struct {
	mu        sync.Mutex
	snoozes   map[int64]int
	succeeded map[int64]bool
}

func newSnoozeCounter() *snoozeCounter {
	return &snoozeCounter{snoozes: map[int64]int{}, succeeded: map[int64]bool{}}
}

func (o *snoozeCounter) JobStarted(ctx context.Context, _ *engine.Job) context.Context { return ctx }

func (o *snoozeCounter) JobFinished(_ context.Context, job *engine.Job, f engine.Finish) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch f.Outcome {
	case engine.OutcomeSnoozed:
		o.snoozes[job.ID]++
	case engine.OutcomeSucceeded:
		o.succeeded[job.ID] = true
	}
}

// of reads, for the jobs ids, how many were snoozed at least once, the
// most snoozes one had, and how many succeeded.
func (o *snoozeCounter) of(ids []int64) (snoozed, most, succeeded int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if n := o.snoozes[id]; n > 0 {
			snoozed++
			most = max(most, n)
		}
		if o.succeeded[id] {
			succeeded++
		}
	}
	return snoozed, most, succeeded
}

// heldDuringProbe opens a breaker, starts its probe (a job that runs until
// end is sent what it returns; the handler's timeout ten minutes, so that
// the probe is taken for lost only after that), and sends held jobs,
// which meet it half-open. It returns once every held job was snoozed.
func heldDuringProbe(t *testing.T, held int) (ids []int64, counter *snoozeCounter, end chan<- error) {
	t.Helper()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) {
		// The job that opens the breaker fails once, for good: run
		// again, it would fail other probes.
		qs.MaxRetries = 1
		qs.VisibilityTimeout = 10 * time.Minute
	})
	cfg := probeBreaker()
	counter = newSnoozeCounter()
	ends := make(chan error, 1)
	probe := func(ctx context.Context) error {
		select {
		case err := <-ends:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var good atomic.Int32
	started := make(chan struct{}, 1)
	c := pgtest.NewClient(t, s, q, func(ec *engine.Config) {
		ec.Queues[0].Concurrency = 8
		ec.Observers = []engine.Observer{counter}
	})
	c.Handle("call", probeHandler(probe, started, &good), engine.HandlerOptions{Breaker: cfg, Timeout: 10 * time.Minute})
	pgtest.Start(t, c)
	openBreaker(t, s, c, q, cfg.Name)
	pgtest.Send(t, c, q, "probe", engine.SendOptions{Kind: "call"})
	<-started // the breaker is half-open, its probe running
	batch := make([]engine.BatchMessage, held)
	for i := range batch {
		batch[i] = engine.BatchMessage{Payload: "good", Options: engine.SendOptions{Kind: "call"}}
	}
	ids, err := c.SendBatch(testContext(t), q, batch)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "every held job snoozed", func() bool {
		snoozed, _, _ := counter.of(ids)
		return snoozed == held
	})
	return ids, counter, ends
}

// A job that meets its breaker half-open waits out the probe, snoozed
// once: it used to be read and snoozed again every second of the probe,
// which may run for the handler's whole timeout (99,755 snoozes a minute
// for 10,000 held jobs).
func TestHeldJobsWaitOutTheProbe(t *testing.T) {
	t.Parallel()
	ids, counter, end := heldDuringProbe(t, 200)
	// Several seconds of the probe: a held job snoozed for a second at a
	// time is read again each of them.
	time.Sleep(5 * time.Second)
	if _, most, _ := counter.of(ids); most > 2 {
		t.Fatalf("a held job was snoozed %d times while the probe ran; want it to wait out the probe, snoozed once", most)
	}
	end <- nil
	pgtest.Eventually(t, time.Minute, "the held jobs to run", func() bool {
		_, _, ran := counter.of(ids)
		return ran == len(ids)
	})
}

// However the probe ends, the jobs held while it ran do not wait until it
// would have been taken for lost (over ten minutes here): they run at once
// when it succeeds; when it fails they wait out the new cool-off and the
// next probe; when it is given back the next job probes.
func TestHeldJobsRunAfterTheProbe(t *testing.T) {
	t.Parallel()
	for ending, err := range map[string]error{
		"succeeds":   nil,
		"fails":      errTransient,
		"given back": engine.NonRetryable(errors.New("bad input")),
	} {
		t.Run(ending, func(t *testing.T) {
			t.Parallel()
			ids, counter, end := heldDuringProbe(t, 50)
			end <- err
			// Minutes against seconds: a held job that waits for the probe
			// to be taken for lost does not run within this.
			pgtest.Eventually(t, time.Minute, "the held jobs to run", func() bool {
				_, _, ran := counter.of(ids)
				return ran == len(ids)
			})
			if _, most, _ := counter.of(ids); most > 2 {
				t.Fatalf("a held job was snoozed %d times; want once while the probe ran, and once more while the next one did", most)
			}
		})
	}
}
