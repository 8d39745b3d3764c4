package bench

import (
	"context"
	"slices"

	"github.com/pgbus/pgbus/store"
)

// Repeat runs opts.Workload runs times, each on a fresh queue, hands every
// result to each as it comes, and returns the median jobs per second.
func Repeat(ctx context.Context, st *store.Store, opts Options, runs int, each func(Result)) (median float64, err error) {
	speeds := make([]float64, 0, runs)
	for range runs {
		res, err := Run(ctx, st, opts)
		if err != nil {
			return 0, err
		}
		each(res)
		speeds = append(speeds, res.JobsPerSecond)
	}
	if len(speeds) == 0 {
		return 0, nil
	}
	slices.Sort(speeds)
	return speeds[len(speeds)/2], nil
}
