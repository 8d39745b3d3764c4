package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A retry or discard given ids and a filter is refused naming the filters
// it was given, the ones to drop, group among them.
func TestIDsAndFilterNamesTheFiltersGiven(t *testing.T) {
	t.Parallel()
	key := "01aa" + strings.Repeat("0", 22)
	for _, c := range []struct {
		f    ops.DeadFilter
		want string
	}{
		{ops.DeadFilter{Group: key}, "drop group, or drop the ids"},
		{ops.DeadFilter{Queue: "orders", Kind: "k", Group: key}, "drop kind and group, or drop the ids"},
		{ops.DeadFilter{ErrorClass: "E", Reason: "max_attempts", Since: "1h", Text: "x"}, "drop error_class, reason, since and text, or drop the ids"},
	} {
		for name, check := range map[string]func() error{
			"retry":   ops.DLQRetryRequest{IDs: []int64{1200}, Filter: c.f, DryRun: true}.Check,
			"discard": ops.DLQDiscardRequest{IDs: []int64{1200}, Filter: c.f, DryRun: true}.Check,
		} {
			if err := check(); err == nil || !strings.Contains(err.Error(), "not both") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s of ids with filter %+v = %v; want it refused saying %q", name, c.f, err, c.want)
			}
		}
	}
}
