package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue dropped and made again by another process with other priority
// levels (fewer, none, more) while its workers run: the running worker
// works the new layout, its last level included, without a restart, and
// says so in one line, not as an error.
func TestWorkerWorksItsQueueMadeAgainWithOtherLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ from, to int }{{3, 0}, {0, 3}, {2, 4}, {4, 2}} {
		t.Run(fmt.Sprintf("%d_to_%d", tc.from, tc.to), func(t *testing.T) {
			t.Parallel()
			s := testStore(t)
			ctx := testContext(t)
			q := uniqueName("rl")
			create := func(st *store.Store, levels int) {
				t.Helper()
				var err error
				if levels > 1 {
					err = st.CreatePriorityQueue(ctx, q, levels)
				} else {
					err = st.CreateQueue(ctx, q)
				}
				if err != nil {
					t.Fatal(err)
				}
				pgtest.SetFastSettings(t, st, q, nil)
			}
			create(s, tc.from)
			t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })

			var logs pgtest.SyncBuffer
			c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			var mu sync.Mutex
			ran := map[string]bool{}
			c.HandleQueue(q, func(_ context.Context, j *engine.Job) error {
				mu.Lock()
				defer mu.Unlock()
				ran[string(j.Payload)] = true
				return nil
			})
			hasRun := func(payload string) func() bool {
				return func() bool { mu.Lock(); defer mu.Unlock(); return ran[payload] }
			}
			pgtest.Start(t, c)
			pgtest.Send(t, c, q, "before", engine.SendOptions{Priority: max(tc.from-1, 0)})
			pgtest.Eventually(t, 30*time.Second, "the first message to run", hasRun(`"before"`))

			// The operator's drop and create, from another process, which
			// then sends to the new layout's last level.
			other := pgtest.OpenStore(t, pgtest.URL(t))
			if err := other.DropQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			create(other, tc.to)
			sender, err := engine.NewClient(other, engine.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sender.Send(ctx, q, "after", engine.SendOptions{Priority: max(tc.to-1, 0)}); err != nil {
				t.Fatal(err)
			}
			pgtest.Eventually(t, 60*time.Second, "the message sent to the queue made again to run in the running worker", hasRun(`"after"`))

			said := "the queue was made again with " + levelsWords(tc.to) + ", where this worker read " + levelsWords(tc.from) + ": it works the new layout"
			if n := strings.Count(logs.String(), said); n != 1 {
				t.Fatalf("the new layout said %d times, want once (%q); log:\n%s", n, said, logs.String())
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("an error was logged:\n%s", logs.String())
			}
		})
	}
}

// levelsWords words a number of priority levels as the worker's log does.
func levelsWords(n int) string {
	if n <= 1 {
		return "no priority levels"
	}
	return fmt.Sprintf("%d priority levels", n)
}
