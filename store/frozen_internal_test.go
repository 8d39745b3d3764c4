package store

import (
	"testing"
	"time"
)

// The calls under way when a path froze are given up one by one, each at
// its own deadline: only the first drops the pool's connections, and a
// call begun after that drop, which froze on a new connection, drops them
// again.
func TestConnDropsOncePerBurst(t *testing.T) {
	t.Parallel()
	var d connDrops
	burst := time.Now()
	if !d.due(burst) {
		t.Fatal("the first call given up dropped nothing")
	}
	for i := range 3 {
		if d.due(burst.Add(-time.Duration(i) * time.Second)) {
			t.Errorf("call %d, begun before the drop, dropped the connections again", i)
		}
	}
	if !d.due(time.Now()) {
		t.Error("a call begun after the drop, given up in turn, dropped nothing")
	}
}
