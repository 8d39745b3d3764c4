package pgtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// NewClient makes an engine client for one queue with quick polling, a
// fixed jitter source (0.5 makes the jitter factor exactly 1) and no
// retention, changed by edit when it is not nil.
func NewClient(tb testing.TB, st *store.Store, queue string, edit func(*engine.Config)) *engine.Client {
	tb.Helper()
	cfg := engine.Config{
		Queues:          []engine.QueueConfig{{Name: queue, Concurrency: 4}},
		PollInterval:    50 * time.Millisecond,
		SettingsRefresh: 100 * time.Millisecond,
		StatsFlush:      100 * time.Millisecond,
		DrainTimeout:    5 * time.Second,
		Rand:            func() float64 { return 0.5 },
		// Retention prunes the whole database: a test that wants it sets
		// an interval, on a database of its own when it counts rows.
		RetentionInterval: -1,
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := engine.NewClient(st, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Start runs c until the test ends or stop is called, and fails the test if
// Run returns an error or does not return within a minute of being stopped.
func Start(tb testing.TB, c *engine.Client) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("Run: %v", err)
				}
			case <-time.After(time.Minute):
				tb.Errorf("Run did not return within a minute of its context ending")
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// Send sends payload to queue through c, failing the test on error, and
// returns the message's id.
func Send(tb testing.TB, c *engine.Client, queue string, payload any, opts engine.SendOptions) int64 {
	tb.Helper()
	id, err := c.Send(Context(tb), queue, payload, opts)
	if err != nil {
		tb.Fatalf("send: %v", err)
	}
	return id
}

// AwaitJob waits until a handler says, on ran, that it ran message id,
// and fails the test if Run returns first (on done) or ctx ends, with
// what logs holds.
func AwaitJob(ctx context.Context, tb testing.TB, ran <-chan int64, done <-chan error, id int64, logs fmt.Stringer) {
	tb.Helper()
	select {
	case got := <-ran:
		if got != id {
			tb.Errorf("ran message %d, want %d", got, id)
		}
	case err := <-done:
		tb.Fatalf("Run returned before working the job: %v\n%s", err, logs)
	case <-ctx.Done():
		tb.Fatalf("the job sent did not run:\n%s", logs)
	}
}

// RunReporting has c handle queue by saying each message it runs on ran
// (dropping what no one waits for), and runs c until stop is called: done
// gets Run's error.
func RunReporting(c *engine.Client, queue string) (ran <-chan int64, done <-chan error, stop func()) {
	reported := make(chan int64, 1)
	c.HandleQueue(queue, func(_ context.Context, job *engine.Job) error {
		select {
		case reported <- job.ID:
		default:
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- c.Run(ctx) }()
	return reported, ended, cancel
}
