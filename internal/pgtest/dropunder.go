package pgtest

import (
	"sync"
	"testing"
)

// deadReadMarker is in the statement of every read of several DLQs at
// once (a list's page, a lookup of ids), which names each DLQ's table,
// and in no listing of the DLQs.
const deadReadMarker = "::text AS dlq"

// DroppedUnderDeadReads makes a database of its own with n queues, each
// with a dead message, and returns its URL through a proxy, under which
// each of the first n reads of every DLQ that a client sends finds a DLQ
// it names dropped: the proxy holds the read, another session drops one
// of the queues it names, and the read goes on to the server, as a read
// of every DLQ meets a queue that another process dropped between its
// listing of the DLQs and its read. drops waits for the n drops and
// returns how many were made; call it once the client's call returned.
func DroppedUnderDeadReads(tb testing.TB, n int) (url string, drops func() int) {
	tb.Helper()
	direct := NewDatabase(tb)
	st := OpenStore(tb, direct)
	queues := make([]string, n)
	for i := range queues {
		queues[i] = NewQueue(tb, st, "dropped")
		DeadLetter(tb, st, queues[i], DeadSpec{Kind: "k", Message: "boom"})
	}
	p := NewFreezingProxy(tb, direct)
	ctx := Context(tb)
	held, release := p.HoldWhenSent(deadReadMarker)
	done := make(chan int, 1)
	go func() {
		dropped := 0
		defer func() { done <- dropped }()
		defer func() { release() }()
		for i, q := range queues {
			select {
			case <-held:
			case <-ctx.Done():
				return
			}
			if err := st.DropQueue(ctx, q); err != nil {
				tb.Errorf("pgtest: drop queue %s under a read of every DLQ: %v", q, err)
				return
			}
			dropped++
			last := release
			if i+1 < len(queues) {
				// The next read is held before this one goes on.
				held, release = p.HoldWhenSent(deadReadMarker)
			}
			last()
		}
	}()
	return p.URL(), sync.OnceValue(func() int { return <-done })
}
