package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// runCounter counts the runs of each message's job.
type runCounter struct {
	mu   sync.Mutex
	runs map[int64]int
}

func (c *runCounter) ran(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[int64]int{}
	}
	c.runs[id]++
}

func (c *runCounter) of(id int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

// When the archive already holds a row of a message's id, an older
// message's (an unlogged queue's ids start again after a crash of the
// server, its archive keeps its rows), the archive of that message's
// success or discard is refused however often it is tried. The queue's
// other outcomes are written all the same, the colliding messages leave
// the queue with the older archive rows kept and their ids named in the
// log, and no job runs twice.
func TestArchiveOfAnIDTheArchiveHoldsLetsTheQueueGoOn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, q := storeAndQueue(t)
	c, logs := loggedClient(t, s, q, slog.LevelWarn, nil)
	var runs runCounter
	c.Handle("ok", func(ctx context.Context, j *engine.Job) error { runs.ran(j.ID); return nil }, engine.HandlerOptions{})
	c.Handle("bad", func(ctx context.Context, j *engine.Job) error {
		runs.ran(j.ID)
		return engine.Discard(errors.New("bad input"))
	}, engine.HandlerOptions{})
	ok1 := pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{Kind: "ok"})
	ok2 := pgtest.Send(t, c, q, map[string]int{"n": 2}, engine.SendOptions{Kind: "ok"})
	bad1 := pgtest.Send(t, c, q, map[string]int{"n": 3}, engine.SendOptions{Kind: "bad"})
	bad2 := pgtest.Send(t, c, q, map[string]int{"n": 4}, engine.SendOptions{Kind: "bad"})
	// Older messages of ids ok2 and bad1, archived before the ids started
	// again.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq.a_`+q+` (msg_id, read_ct, enqueued_at, vt, message)
		SELECT id, 1, now() - interval '1 day', now() - interval '1 day', '{"older": true}' FROM unnest($1::bigint[]) id`,
		[]int64{ok2, bad1}); err != nil {
		t.Fatal(err)
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the queue emptied", func() bool { return pgtest.Live(t, s, q) == 0 })
	// Each outcome is told to the log once its write committed, which may
	// be just after the queue emptied.
	said := []string{"outcome=success ids=[" + strconv.FormatInt(ok2, 10) + "]", "outcome=discard ids=[" + strconv.FormatInt(bad1, 10) + "]"}
	pgtest.Eventually(t, 30*time.Second, "the log to name the colliding ids of both outcomes", func() bool {
		out := logs.String()
		return strings.Contains(out, said[0]) && strings.Contains(out, said[1])
	})

	rows, err := s.Pool().Query(ctx, `SELECT msg_id, message->>'older' IS NOT NULL, headers ? 'pgbus_discarded' FROM pgmq.a_`+q+` ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	type archived struct{ older, discarded bool }
	got := map[int64]archived{}
	for rows.Next() {
		var id int64
		var a archived
		var discarded *bool
		if err := rows.Scan(&id, &a.older, &discarded); err != nil {
			t.Fatal(err)
		}
		a.discarded = discarded != nil && *discarded
		got[id] = a
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[int64]archived{ok1: {}, ok2: {older: true}, bad1: {older: true}, bad2: {discarded: true}}
	if len(got) != len(want) {
		t.Errorf("the archive holds %v, want %v", got, want)
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			t.Errorf("archive row %d: %+v (there: %v), want %+v", id, g, ok, w)
		}
	}
	for _, id := range []int64{ok1, ok2, bad1, bad2} {
		if n := runs.of(id); n != 1 {
			t.Errorf("the job of message %d ran %d times, want once", id, n)
		}
	}
	out := logs.String()
	if strings.Contains(out, "retrying") {
		t.Errorf("the write was retried:\n%s", out)
	}
	if want := "already holds messages of these ids"; !strings.Contains(out, want) {
		t.Errorf("the log lacks %q:\n%s", want, out)
	}
}

// An outcome the database refuses for a constraint of the data, even
// alone, is left, its message in the queue, named in the log with the
// error; the queue's other outcomes are written beside it.
func TestOutcomeRefusedForAConstraintIsLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, q := storeAndQueue(t)
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq.a_`+q+` ADD CONSTRAINT no_poison CHECK (message->>'poison' IS NULL)`); err != nil {
		t.Fatal(err)
	}
	c, logs := loggedClient(t, s, q, slog.LevelWarn, nil)
	var runs runCounter
	c.Handle("ok", func(ctx context.Context, j *engine.Job) error { runs.ran(j.ID); return nil }, engine.HandlerOptions{})
	var ids []int64
	for i := range 3 {
		ids = append(ids, pgtest.Send(t, c, q, map[string]int{"n": i}, engine.SendOptions{Kind: "ok"}))
	}
	poison := pgtest.Send(t, c, q, map[string]bool{"poison": true}, engine.SendOptions{Kind: "ok"})
	pgtest.Start(t, c)
	pgtest.Eventually(t, 30*time.Second, "the other messages archived", func() bool {
		return pgtest.Archived(t, s, q) == len(ids)
	})
	pgtest.Eventually(t, 30*time.Second, "the refused outcome logged", func() bool {
		return strings.Contains(logs.String(), "id="+strconv.FormatInt(poison, 10))
	})
	out := logs.String()
	for _, want := range []string{"level=ERROR", "refuses this outcome", "outcome=success", "no_poison", "left in the queue"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "retrying") {
		t.Errorf("the write was retried:\n%s", out)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.q_`+q+` WHERE msg_id = $1`, poison); n != 1 {
		t.Errorf("the refused message is %d times in the queue, want once", n)
	}
	for _, id := range ids {
		if n := runs.of(id); n != 1 {
			t.Errorf("the job of message %d ran %d times, want once", id, n)
		}
	}
}
