package bench_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bench"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func testStore(t *testing.T) *store.Store { return pgtest.Store(t) }

// Every workload runs to completion on a small scale, reports what it did
// and leaves no queue behind.
func TestWorkloadsComplete(t *testing.T) {
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, w := range []string{bench.Drain, bench.Retry, bench.Dead} {
		res, err := bench.Run(ctx, s, bench.Options{Workload: w, Jobs: 300, Workers: 10})
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if res.Workload != w || res.Jobs != 300 || res.Workers != 10 || res.Seconds <= 0 || res.JobsPerSecond <= 0 {
			t.Fatalf("%s: result %+v", w, res)
		}
	}
	res, err := bench.Run(ctx, s, bench.Options{Workload: bench.Steady, Rate: 300, Duration: 2 * time.Second, Workers: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs < 500 || res.LatencyP50MS == nil || res.LatencyP99MS == nil || *res.LatencyP99MS < *res.LatencyP50MS || res.BacklogBounded == nil {
		t.Fatalf("steady: result %+v", res)
	}
	queues, err := s.ListQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		if strings.HasPrefix(q.Name, "bench_") {
			t.Fatalf("queue %s left behind", q.Name)
		}
	}
}

func TestBadOptions(t *testing.T) {
	s := testStore(t)
	for label, o := range map[string]bench.Options{
		"unknown workload": {Workload: "fast"},
		"negative jobs":    {Workload: bench.Drain, Jobs: -1},
		"huge jobs":        {Workload: bench.Drain, Jobs: 1 << 40},
		"negative workers": {Workload: bench.Drain, Workers: -5},
		"short duration":   {Workload: bench.Steady, Duration: time.Millisecond},
	} {
		if _, err := bench.Run(context.Background(), s, o); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
}
