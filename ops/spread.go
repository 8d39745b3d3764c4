package ops

import (
	"cmp"
	"slices"
)

// inTurns orders items for a list that a response bound may cut short:
// by turns, the next item of each list of lists (in the order lists are
// given, each in its own order), skipping those already taken, then every
// item none of them holds, in the order of items. A cut list then keeps
// the worst of every kind of trouble, where one kind with many items
// (three hundred queues with dead messages) would crowd out the others (a
// backlog of thousands, a dropped queue). Items are told apart by id.
func inTurns[T any](items []T, id func(T) string, lists ...[]T) []T {
	out := make([]T, 0, len(items))
	taken := make(map[string]bool, len(items))
	take := func(t T) bool {
		if taken[id(t)] {
			return false
		}
		taken[id(t)] = true
		out = append(out, t)
		return true
	}
	for {
		took := false
		for i := range lists {
			for len(lists[i]) > 0 {
				t := lists[i][0]
				lists[i] = lists[i][1:]
				if take(t) {
					took = true
					break
				}
			}
		}
		if !took {
			break
		}
	}
	for _, t := range items {
		take(t)
	}
	return out
}

// sortedBy returns the items for which keep holds, largest key first.
func sortedBy[T any](items []T, keep func(T) bool, key func(T) int64) []T {
	out := slices.DeleteFunc(slices.Clone(items), func(t T) bool { return !keep(t) })
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(key(b), key(a)) })
	return out
}
