package mcpserver

import (
	"fmt"
	"testing"
)

// The budget forgets a client once its anonymous bodies are given back,
// so that clients come and go without the table growing; and while
// anonymousMaxClients clients hold bodies, a new one finds no room, so
// that the table never holds more.
func TestBodyBudgetForgetsClients(t *testing.T) {
	t.Parallel()
	const size = 1 << 40 // room for far more clients than are tracked
	b := newBodyBudget(size, anonymousMaxBody)
	for i := range anonymousMaxClients {
		if got := b.take(1, true, fmt.Sprint("client ", i)); got != roomTaken {
			t.Fatalf("client %d of %d: room %d; want taken", i+1, anonymousMaxClients, got)
		}
	}
	if got := b.take(1, true, "one client too many"); got != roomAnonymousFull {
		t.Errorf("a client past the %d tracked: room %d; want %d, no room for anonymous bodies", anonymousMaxClients, got, roomAnonymousFull)
	}
	if got := b.take(1, true, "client 0"); got != roomTaken {
		t.Errorf("a second body of a tracked client: room %d; want taken", got)
	}
	b.give(1, true, "client 0")
	for i := range anonymousMaxClients {
		b.give(1, true, fmt.Sprint("client ", i))
	}
	if len(b.clients) != 0 || b.left != size || b.anonymousLeft != size/anonymousShare {
		t.Errorf("all bodies given back: %d clients tracked, %d of %d left, %d of %d anonymous; want none tracked, all left",
			len(b.clients), b.left, int64(size), b.anonymousLeft, int64(size/anonymousShare))
	}
	if got := b.take(1, true, "one client too many"); got != roomTaken {
		t.Errorf("a new client once the others left: room %d; want taken", got)
	}
}
