//go:build race

package ops_test

// raceOn: the race detector is on, under which sync.Pool drops what it
// is given at random, so that the regexp package allocates its matchers
// again and again: the bytes a call allocates are not its own then.
const raceOn = true
