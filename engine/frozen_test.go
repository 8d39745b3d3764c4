package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A connection that stops answering without being closed (a failover
// behind a proxy, a frozen path) holds no loop for good: each call gives
// up after the database call timeout, its connection is dropped, and the
// next try takes a new one. Polls an hour apart leave the wake-ups to the
// listener, which must notice its own connection went silent too.
func TestWorkersRecoverFromFrozenConnections(t *testing.T) {
	t.Parallel()
	direct, q := storeAndQueue(t)
	path := storeThroughProxy(t, nil)
	through := path.store
	var ran atomic.Int64
	c, logs := loggedClient(t, through, q, slog.LevelInfo, func(cfg *engine.Config) {
		cfg.PollInterval = time.Hour
		cfg.DatabaseCallTimeout = 2 * time.Second
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { ran.Add(1); return nil })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	pgtest.Start(t, c)
	sender := pgtest.NewClient(t, direct, q, nil) // never run: it only sends
	for i := range 3 {
		pgtest.Send(t, sender, q, map[string]int{"n": i}, engine.SendOptions{})
	}
	pgtest.Eventually(t, time.Minute, "the first messages archived", func() bool { return pgtest.Archived(t, direct, q) == 3 })

	path.freeze(t, direct)
	// Two rounds: a wake-up the listener received before the freeze may
	// still be pending and serve the first; the second then needs a
	// listener on a new connection.
	for round := 1; round <= 2; round++ {
		for i := range 3 {
			pgtest.Send(t, sender, q, map[string]int{"round": round, "n": i}, engine.SendOptions{})
		}
		pgtest.Eventually(t, 3*time.Minute, fmt.Sprintf("the messages of round %d after the freeze archived through new connections", round), func() bool {
			return pgtest.Archived(t, direct, q) == 3+3*round
		})
	}
	if ran.Load() < 9 {
		t.Errorf("handlers ran %d times, want at least 9", ran.Load())
	}
}

// givenUpLine starts the debug line of each call given up for want of an
// answer.
const givenUpLine = `msg="pgbus: a database call got no answer`

// When a path freezes, every connection of the pool froze with it: the
// first call given up drops them all, so that the workers work again after
// a call or two given up, not after one per connection of the pool, each a
// whole timeout.
func TestFrozenPoolIsDroppedAtTheFirstCallGivenUp(t *testing.T) {
	t.Parallel()
	const poolSize = 8
	direct, q := storeAndQueue(t)
	path := storeThroughProxy(t, func(url string) string {
		return pgtest.WithParam(t, url, "pool_max_conns", strconv.Itoa(poolSize))
	})
	through := path.store
	var logs pgtest.SyncBuffer
	var frozen atomic.Bool
	seenByJob := make(chan string, 1) // the log as the first job after the freeze runs
	c := pgtest.NewClient(t, through, q, func(cfg *engine.Config) {
		cfg.PollInterval = 200 * time.Millisecond
		// Loops that would meet the freeze at the same moment as the
		// reads: each would give up a call of its own.
		cfg.SettingsRefresh, cfg.StatsFlush, cfg.ProcessHeartbeat = time.Hour, time.Hour, time.Hour
		cfg.DatabaseCallTimeout = 2 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		if frozen.Load() {
			select {
			case seenByJob <- logs.String():
			default:
			}
		}
		return nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	pgtest.Start(t, c)
	sender := pgtest.NewClient(t, direct, q, nil) // never run: it only sends
	pgtest.Send(t, sender, q, map[string]int{"n": 0}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the first message archived", func() bool { return pgtest.Archived(t, direct, q) == 1 })
	pgtest.FillPool(t, through.Pool(), poolSize)

	givenUpBefore := strings.Count(logs.String(), givenUpLine)
	path.freeze(t, direct)
	frozen.Store(true)
	pgtest.Send(t, sender, q, map[string]int{"n": 1}, engine.SendOptions{})
	var seen string
	select {
	case seen = <-seenByJob:
	case <-time.After(3 * time.Minute):
		t.Fatal("timed out after 3m waiting for the message sent after the freeze to run")
	}
	givenUp := strings.Count(seen, givenUpLine) - givenUpBefore
	if givenUp < 1 {
		t.Fatalf("no call was given up before the first job after the freeze: the freeze held no connection the workers used")
	}
	if givenUp > 2 {
		t.Errorf("%d calls were given up before the first job after the freeze, want at most 2: the pool handed out its %d frozen connections one by one", givenUp, poolSize)
	}
}

// frozenPath is a store on the test database through a freezing proxy.
type frozenPath struct {
	proxy *pgtest.FreezingProxy
	store *store.Store
	app   string // the application_name of the store's connections
}

// storeThroughProxy opens a store on the test database (migrated by
// testStore) through a freezing proxy, at the proxy's URL changed by edit
// when it is not nil. The store is closed after the proxy, whose close
// ends the frozen connections at once: closed first, the pool would wait
// for each to answer its goodbye, up to 15 seconds.
func storeThroughProxy(t *testing.T, edit func(url string) string) *frozenPath {
	t.Helper()
	p := &frozenPath{app: uniqueName("pgbus_frozen")}
	// Cleanups run last first: this one after the proxy's.
	t.Cleanup(func() {
		if p.store != nil {
			p.store.Close()
		}
	})
	p.proxy = pgtest.NewFreezingProxy(t, pgtest.URL(t))
	url := pgtest.WithParam(t, p.proxy.URL(), "application_name", p.app)
	if edit != nil {
		url = edit(url)
	}
	var err error
	if p.store, err = store.Open(testContext(t), url); err != nil {
		t.Fatal(err)
	}
	return p
}

// freeze freezes the connections the proxy carries, and then ends their
// server side, as a failover ends the old server's sessions; the client
// sees the freeze alone. A read the server received just before the
// freeze could otherwise claim a message sent after it and hold it, in a
// transaction whose commit the freeze keeps from coming, for as long as
// the proxy keeps the connection open: no worker could ever run it.
func (p *frozenPath) freeze(t *testing.T, direct *store.Store) {
	t.Helper()
	p.proxy.Freeze()
	terminateApp(t, direct, p.app)
}
