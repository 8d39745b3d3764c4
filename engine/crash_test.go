package engine_test

import (
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A child holding messages (their handlers running, the heartbeat keeping
// them invisible) is SIGKILLed; after their visibility timeout another
// worker finishes them, on their second delivery.
func TestCrashHeldMessagesFinishedByAnotherWorker(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, crashSettings)
	fleet := newCrashFleet(t, q, 5)
	child := fleet.spawn()

	ids, err := s.SendBatch(ctx, q, crashMessages(t, 0, 5, func(int) string { return "slow" }))
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the child to run all 5 slow handlers", func() bool {
		if child.exited() {
			t.Fatalf("child worker exited early: %v\n%s", child.cmd.ProcessState, tail(child.stderr.String(), 4000))
		}
		return child.inFlight() == 5
	})
	if n := queryInt(ctx, t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE read_ct = 1`); n != 5 {
		t.Fatalf("%d of 5 messages are held with read_ct 1", n)
	}

	child.killedByParent.Store(true)
	child.kill()
	select {
	case <-child.done:
	case <-time.After(30 * time.Second):
		t.Fatal("killed child not reaped within 30s")
	}
	if !child.diedOfSIGKILL() {
		t.Fatalf("child ended with %v, want SIGKILL", child.state())
	}
	// The dead child's messages are still in the queue, invisible until the
	// visibility timeout the child last set.
	visibleAt := map[int64]time.Time{}
	rows, err := s.Pool().Query(ctx, `SELECT msg_id, vt FROM pgmq."q_`+q+`" WHERE read_ct = 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var vt time.Time
		if err := rows.Scan(&id, &vt); err != nil {
			t.Fatal(err)
		}
		visibleAt[id] = vt
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(visibleAt) != 5 {
		t.Fatalf("after the kill %d of 5 messages are in the queue with read_ct 1", len(visibleAt))
	}

	type run struct {
		attempt int
		at      time.Time
	}
	var mu sync.Mutex
	runs := map[int64][]run{}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Queues[0].Concurrency = 5 })
	c.Handle("slow", func(ctx context.Context, job *engine.Job) error {
		var now time.Time // the database's clock, which vt is on
		if err := s.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		runs[job.ID] = append(runs[job.ID], run{job.Attempt, now})
		return nil
	})
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the second worker to archive the 5 messages", func() bool { return pgtest.Archived(t, s, q) == 5 })

	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		r := runs[id]
		if len(r) != 1 || r[0].attempt != 2 {
			t.Errorf("message %d: second worker's runs %+v, want one run on attempt 2", id, r)
			continue
		}
		if r[0].at.Before(visibleAt[id]) {
			t.Errorf("message %d ran again at %s, before its visibility timeout %s", id, r[0].at, visibleAt[id])
		}
		if rc := pgtest.Int(t, s, `SELECT read_ct FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); rc != 2 {
			t.Errorf("message %d archived with read_ct %d, want 2", id, rc)
		}
		if fs := failures(t, s, q, id); len(fs) != 0 {
			t.Errorf("message %d: a crash recorded failures: %+v", id, fs)
		}
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Errorf("%d messages left in the queue", n)
	}
	if d := deadMessages(t, s, q); len(d) != 0 {
		t.Errorf("%d messages in the DLQ, want none", len(d))
	}
	fleet.stopAll()
	fleet.checkExits(t)
}

// Two child workers run at all times over at least 4,000 messages ("ok",
// "flaky" failing 30% of the time, and "poison" that kills its worker); the
// test SIGKILLs a random busy child every 0.5–1s, at least 8 times. In the
// end every message is exactly once in the archive or a DLQ. (10,000
// messages took three minutes under -race on a busy two-core machine, the
// test's own limit, and found nothing 4,000 do not: what counts is the
// kills, and more messages are sent until there have been enough.)
func TestCrashedWorkersLoseNothing(t *testing.T) {
	t.Parallel()
	const (
		total     = 4_000
		batch     = 500
		minKills  = 5
		children  = 2
		perChild  = 20
		poisonMod = 400 // n % 400 == 200: 10 poison messages
	)
	s := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	q := newQueue(t, s, crashSettings)
	dlq := store.DLQName(q)
	kindOf := func(n int) string {
		switch {
		case n < total && n%poisonMod == poisonMod/2:
			return "poison"
		case n%2 == 0:
			return "ok"
		default:
			return "flaky"
		}
	}
	fleet := newCrashFleet(t, q, perChild)

	var kids [children]*crashChild
	for i := range kids {
		kids[i] = fleet.spawn()
	}
	var parentKills []*crashChild
	selfKills := 0
	sent := 0
	nextSend := time.Now()
	nextKill := time.Now().Add(500 * time.Millisecond)
	deadline := time.Now().Add(3 * time.Minute)
	liveCount := func() int { return queryInt(ctx, t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`) }
	// A kill waits for some messages settled since the last: on a machine
	// too busy for a new worker to get going within a second, kills at a
	// fixed pace would outrun the work (120 kills in 3 minutes settled 721
	// messages so).
	settled := func() int {
		return queryInt(ctx, t, s, `SELECT (SELECT count(*) FROM pgmq."a_`+q+`") + (SELECT count(*) FROM pgmq."q_`+dlq+`")`)
	}
	settledAtKill := 0
	for {
		for i, c := range kids {
			if c.exited() {
				if !c.killedByParent.Load() {
					selfKills++
					if !c.ranKind("poison") {
						t.Errorf("child worker %d died (%s) without running a poison message; stderr:\n%s",
							c.cmd.Process.Pid, c.state(), tail(c.stderr.String(), 4000))
					}
				}
				kids[i] = fleet.spawn()
			}
		}
		now := time.Now()
		if sent < total && !now.Before(nextSend) {
			if _, err := s.SendBatch(ctx, q, crashMessages(t, sent, sent+batch, kindOf)); err != nil {
				t.Fatal(err)
			}
			sent += batch
			nextSend = now.Add(200 * time.Millisecond)
		}
		if !now.Before(nextKill) && settled() >= settledAtKill+perChild {
			var busy []*crashChild
			for _, c := range kids {
				if !c.exited() && c.inFlight() > 0 {
					busy = append(busy, c)
				}
			}
			if len(busy) > 0 {
				c := busy[rand.IntN(len(busy))]
				c.killedByParent.Store(true)
				c.kill()
				parentKills = append(parentKills, c)
				settledAtKill = settled()
				nextKill = now.Add(500*time.Millisecond + rand.N(500*time.Millisecond))
			}
		}
		if sent >= total && liveCount() == 0 {
			if len(parentKills) >= minKills+3 { // margin: a kill may catch nothing
				break
			}
			// Everything finished before enough kills: keep the workers
			// busy with more messages until there have been enough.
			if _, err := s.SendBatch(ctx, q, crashMessages(t, sent, sent+batch, kindOf)); err != nil {
				t.Fatal(err)
			}
			sent += batch
		}
		if now.After(deadline) {
			t.Fatalf("after 3 minutes (%d parent kills, %d processes started) messages are still not settled:\n%s",
				len(parentKills), len(fleet.all()), crashDiagnostics(ctx, t, s, q))
		}
		time.Sleep(20 * time.Millisecond)
	}
	fleet.stopAll()
	fleet.checkExits(t)
	t.Logf("%d messages, %d worker processes, %d killed by the test, %d killed by a poison message",
		sent, len(fleet.all()), len(parentKills), selfKills)

	// Where every message ended.
	type fate struct {
		where  string
		kind   string
		msgID  int64
		readCt int
		block  map[string]any
	}
	fates := map[int][]fate{}
	rows, err := s.Pool().Query(ctx, `
		SELECT 'archive', message->>'n', headers->>'pgbus_kind', msg_id, read_ct, NULL::jsonb FROM pgmq."a_`+q+`"
		UNION ALL
		SELECT 'dlq', message->>'n', headers->>'pgbus_kind', msg_id, read_ct, headers->'`+store.HeaderDeadLetter+`' FROM pgmq."q_`+dlq+`"
		UNION ALL
		SELECT 'dlq archive', message->>'n', headers->>'pgbus_kind', msg_id, read_ct, headers->'`+store.HeaderDeadLetter+`' FROM pgmq."a_`+dlq+`"`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f fate
		var nStr *string
		var block []byte
		if err := rows.Scan(&f.where, &nStr, &f.kind, &f.msgID, &f.readCt, &block); err != nil {
			t.Fatal(err)
		}
		n := -1
		if nStr != nil {
			n, _ = strconv.Atoi(*nStr)
		}
		if block != nil {
			if err := json.Unmarshal(block, &f.block); err != nil {
				t.Fatalf("dead-letter block %s: %v", block, err)
			}
		}
		fates[n] = append(fates[n], f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	history := map[int64][2]int{} // DLQ msg id -> (rows, highest attempt)
	rows, err = s.Pool().Query(ctx, `SELECT msg_id, count(*), max(attempt) FROM pgbus.failures WHERE queue_name = $1 GROUP BY msg_id`, dlq)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var n, last int
		if err := rows.Scan(&id, &n, &last); err != nil {
			t.Fatal(err)
		}
		history[id] = [2]int{n, last}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	if n := liveCount(); n != 0 {
		t.Errorf("%d messages left behind in the queue", n)
	}
	var missing, duplicated []int
	for n := range sent {
		switch len(fates[n]) {
		case 0:
			missing = append(missing, n)
		case 1:
		default:
			duplicated = append(duplicated, n)
		}
	}
	for n := range fates {
		if n < 0 || n >= sent {
			t.Errorf("unexpected message n=%d: %+v", n, fates[n])
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d messages lost (in no archive or DLQ), first: %v", len(missing), first(missing, 20))
	}
	if len(duplicated) > 0 {
		for _, n := range first(duplicated, 5) {
			t.Logf("n=%d ended %d times: %+v", n, len(fates[n]), fates[n])
		}
		t.Errorf("%d messages ended more than once, first: %v", len(duplicated), first(duplicated, 20))
	}

	num := func(b map[string]any, k string) int {
		v, _ := b[k].(float64)
		return int(v)
	}
	var archivedN, deadN, deadByFailure, deadByCrash, overLimit, deadOK, retriedOK, poisonDead, poisonExact int
	finalReads := map[int64]int{} // msg id in the queue -> its last read_ct
	for n := range sent {
		fs := fates[n]
		if len(fs) != 1 {
			continue
		}
		f := fs[0]
		kind := kindOf(n)
		if f.kind != kind {
			t.Errorf("n=%d: kind %q, want %q", n, f.kind, kind)
		}
		switch f.where {
		case "archive":
			archivedN++
			finalReads[f.msgID] = f.readCt
			if kind == "poison" {
				t.Errorf("poison message n=%d was archived (read_ct %d): it never succeeds", n, f.readCt)
			}
			if f.readCt < 1 || f.readCt > crashMaxRetries {
				t.Errorf("n=%d archived with read_ct %d, want 1..%d", n, f.readCt, crashMaxRetries)
			}
			if kind == "ok" && f.readCt > 1 {
				retriedOK++ // redelivered only because its worker died
			}
		case "dlq":
			deadN++
			b := f.block
			finalReads[int64(num(b, "source_msg_id"))] = num(b, "attempts")
			some, all := hasErrorKeys(b)
			h := history[f.msgID]
			if b["reason"] != store.ReasonMaxRetriesExceeded || b["source"] != "worker" || b["source_queue"] != q ||
				num(b, "max_retries") != crashMaxRetries {
				t.Errorf("n=%d (%s): dead-letter block %v, want reason %s from worker on %s with max_retries %d",
					n, kind, b, store.ReasonMaxRetriesExceeded, q, crashMaxRetries)
			}
			if some != all {
				t.Errorf("n=%d (%s): block has only some error keys: %v", n, kind, b)
			}
			attempts := num(b, "attempts")
			switch {
			case kind == "poison":
				// The read that finds it over the limit dead-letters it in the
				// same transaction, so attempts is exactly max_retries+1.
				poisonDead++
				if attempts == crashMaxRetries+1 {
					poisonExact++
				}
				if attempts != crashMaxRetries+1 || some || h[0] != 0 {
					t.Errorf("poison n=%d: attempts %d (want %d), error keys %v (want none), %d failure rows (want 0): %v",
						n, attempts, crashMaxRetries+1, some, h[0], b)
				}
			case attempts > crashMaxRetries: // routed at read time after crashes
				// More than max_retries+1 when the worker that read it
				// over the limit died before writing the dead-letter.
				deadByCrash++
				if attempts > crashMaxRetries+1 {
					overLimit++
				}
				if kind == "ok" {
					deadOK++
				}
				if some != (h[0] > 0) {
					t.Errorf("n=%d (%s): error keys %v but %d recorded failures: %v", n, kind, some, h[0], b)
				}
				if some && num(b, "error_attempt") != h[1] {
					t.Errorf("n=%d (%s): error_attempt %d, want the last recorded failure's attempt %d", n, kind, num(b, "error_attempt"), h[1])
				}
			case attempts == crashMaxRetries && kind == "flaky": // its last run failed
				deadByFailure++
				if !all || b["error_class"] != "error" || b["error_message"] != flakyError || num(b, "error_attempt") != crashMaxRetries {
					t.Errorf("flaky n=%d: dead after failing attempt %d, block %v: want error_class \"error\", error_message %q, error_attempt %d",
						n, attempts, b, flakyError, crashMaxRetries)
				}
				if h[0] < 1 || h[1] != crashMaxRetries {
					t.Errorf("flaky n=%d: failure history %d rows, last attempt %d; want the failure of attempt %d", n, h[0], h[1], crashMaxRetries)
				}
			default:
				t.Errorf("n=%d (%s) dead-lettered with attempts %d: %v", n, kind, attempts, b)
			}
		default:
			t.Errorf("n=%d ended in the %s: nothing discards", n, f.where)
		}
	}
	// Failures of dead-lettered messages move with them.
	if n := queryInt(ctx, t, s, `SELECT count(*) FROM pgbus.failures f JOIN pgmq."q_`+dlq+`" d
		ON f.queue_name = $1 AND f.msg_id = (d.headers->'`+store.HeaderDeadLetter+`'->>'source_msg_id')::bigint`, q); n != 0 {
		t.Errorf("%d failure rows of dead-lettered messages still keyed to the source queue", n)
	}
	t.Logf("archived %d (of them %d ok messages redelivered after a crash); dead %d: %d poison (%d with attempts %d), %d by failing %d times, %d by crashes (%d of them ok, %d read more than %d times)",
		archivedN, retriedOK, deadN, poisonDead, poisonExact, crashMaxRetries+1, deadByFailure, crashMaxRetries, deadByCrash, deadOK, overLimit, crashMaxRetries+1)
	if overLimit > 0 {
		t.Errorf("%d messages dead-lettered after more than %d reads: a read past the limit must route in its own transaction", overLimit, crashMaxRetries+1)
	}
	if want := total / poisonMod; poisonDead != want {
		t.Errorf("%d poison messages in the DLQ, want %d", poisonDead, want)
	}
	if deadByFailure == 0 {
		t.Error("no flaky message failed 3 times: with 30% failures about 2.7% of them should have")
	}
	if retriedOK == 0 {
		t.Error("no ok message was archived after a redelivery: crashed workers' messages were not finished by others")
	}

	// Handlers never ran a delivery twice, nor past max_retries: a poison
	// message crashed its worker at most max_retries times.
	runs := map[int64][]int{}
	kindByID := map[int64]string{}
	for _, c := range fleet.all() {
		c.mu.Lock()
		for id, attempts := range c.started {
			runs[id] = append(runs[id], attempts...)
			kindByID[id] = c.kinds[id]
		}
		c.mu.Unlock()
	}
	badRuns := 0
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		attempts := slices.Sorted(slices.Values(runs[id]))
		if slices.Max(attempts) > crashMaxRetries || len(slices.Compact(slices.Clone(attempts))) != len(attempts) {
			if badRuns++; badRuns <= 10 {
				t.Errorf("message %d (%s) ran on attempts %v: want distinct attempts of at most %d", id, kindByID[id], attempts, crashMaxRetries)
			}
		}
	}

	// A kill counts when the killed child had started a delivery that did
	// not fail (no failure recorded for that attempt) and yet the message
	// was read again: it held it when it died.
	type delivery struct {
		id      int64
		attempt int
	}
	failed := map[delivery]bool{}
	rows, err = s.Pool().Query(ctx, `SELECT msg_id, attempt FROM pgbus.failures WHERE queue_name = $1
		UNION ALL
		SELECT (d.headers->'`+store.HeaderDeadLetter+`'->>'source_msg_id')::bigint, f.attempt
		FROM pgbus.failures f JOIN pgmq."q_`+dlq+`" d ON f.queue_name = $2 AND f.msg_id = d.msg_id`, q, dlq)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d delivery
		if err := rows.Scan(&d.id, &d.attempt); err != nil {
			t.Fatal(err)
		}
		failed[d] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	effective := 0
	for _, c := range parentKills {
		c.mu.Lock()
	held:
		for id, attempts := range c.started {
			for _, a := range attempts {
				if c.kinds[id] != "poison" && !failed[delivery{id, a}] && finalReads[id] > a {
					effective++
					break held
				}
			}
		}
		c.mu.Unlock()
	}
	if len(parentKills) < minKills || effective < minKills {
		t.Errorf("%d kills by the test, %d of them of a worker holding messages; want at least %d", len(parentKills), effective, minKills)
	}
	t.Logf("%d of %d kills by the test caught a worker holding messages", effective, len(parentKills))
}

// Poison messages of different ages travel together: each is
// dead-lettered without running on its read past max_retries, with attempts
// = max_retries + 1, even though batch-mates read with it crash the worker.
// Eight poison messages start with read counts 3, 2, 1, 0 (as if earlier
// workers had crashed on them), so on each of the first rounds one child
// reads them all in one batch, two are past the limit and the rest crash it.
//
// Whether the crash lands before the dead-letter write of the first round
// commits is a race; the test decides it: it holds a lock on the DLQ so that
// the write waits. A worker that routes the batch before running any of its
// handlers just waits for the lock; one that runs the other handlers
// meanwhile is killed by them, and the test ends its pending write as the
// crash would have, had it come a moment earlier.
func TestCrashPoisonBatchMateStillDeadLettersAtLimit(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnStore(t) // a pool of its own: the lock holds one of its connections
	ctx := testContext(t)
	q := newQueue(t, s, crashSettings)
	dlq := store.DLQName(q)
	ids, err := s.SendBatch(ctx, q, crashMessages(t, 0, 8, func(int) string { return "poison" }))
	if err != nil {
		t.Fatal(err)
	}
	readCounts := make([]int32, len(ids))
	for i := range ids {
		readCounts[i] = int32(crashMaxRetries - i%(crashMaxRetries+1))
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" q SET read_ct = t.rc
		FROM unnest($1::bigint[], $2::int[]) AS t(id, rc) WHERE q.msg_id = t.id`, ids, readCounts); err != nil {
		t.Fatal(err)
	}

	lock := lockDLQ(t, s, dlq)
	fleet := newCrashFleet(t, q, 10)
	child := fleet.spawn()
	pgtest.Eventually(t, time.Minute, "the child to write a dead-letter or die", func() bool {
		return child.exited() || len(lock.Waiting()) > 0
	})
	// A child that routes the batch first waits for the lock and lives; give
	// one that does not time to run the others and die.
	for wait := time.Now().Add(3 * time.Second); !child.exited() && time.Now().Before(wait); {
		time.Sleep(20 * time.Millisecond)
	}
	if child.exited() {
		n := endWaiting(t, s, lock)
		t.Logf("the child died (%s) before its dead-letter write committed (%d writes pending, ended)",
			child.state(), n)
	}
	lock.Release()
	pgtest.Eventually(t, 2*time.Minute, "all 8 poison messages in the DLQ", func() bool {
		if child.exited() {
			child = fleet.spawn()
		}
		return len(deadMessages(t, s, q)) == len(ids)
	})
	fleet.stopAll()
	fleet.checkExits(t)
	for _, d := range deadMessages(t, s, q) {
		some, _ := hasErrorKeys(d.Block)
		if d.Block["reason"] != store.ReasonMaxRetriesExceeded || d.Block["attempts"] != float64(crashMaxRetries+1) || some {
			t.Errorf("poison %s dead-lettered with reason %v, attempts %v (want %d), error keys %v (want none): %v",
				d.Payload, d.Block["reason"], d.Block["attempts"], crashMaxRetries+1, some, d.Block)
		}
	}
	for _, c := range fleet.all() {
		c.mu.Lock()
		for id, attempts := range c.started {
			if slices.Max(attempts) > crashMaxRetries {
				t.Errorf("poison message %d ran on attempt %v, past max_retries %d", id, attempts, crashMaxRetries)
			}
		}
		c.mu.Unlock()
	}
	if n := pgtest.Live(t, s, q); n != 0 {
		t.Errorf("%d messages left in the queue", n)
	}
}

// A worker killed after it read a message past max_retries, but before its
// dead-letter write committed, must not make that message count another
// read: whichever worker routes it next must still record attempts =
// max_retries + 1. A SIGKILL can land in that window at any time (the kill
// of a worker by an operator, or a poison message of an earlier batch still
// running); the test holds the write on a DLQ lock and kills the child
// there.
func TestCrashBeforeDeadLetterWriteKeepsAttempts(t *testing.T) {
	t.Parallel()
	s := pgtest.OwnStore(t) // a pool of its own: the lock holds one of its connections
	ctx := testContext(t)
	q := newQueue(t, s, crashSettings)
	id, err := s.Send(ctx, q, crashMessages(t, 0, 1, func(int) string { return "poison" })[0])
	if err != nil {
		t.Fatal(err)
	}
	// Its first max_retries deliveries crashed their workers.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET read_ct = $2 WHERE msg_id = $1`, id, crashMaxRetries); err != nil {
		t.Fatal(err)
	}
	lock := lockDLQ(t, s, store.DLQName(q))
	fleet := newCrashFleet(t, q, 5)
	child := fleet.spawn()
	pgtest.Eventually(t, time.Minute, "the child to write the dead-letter", func() bool {
		if child.exited() {
			t.Fatalf("the child died (%s) before writing the dead-letter; stderr:\n%s", child.state(), tail(child.stderr.String(), 4000))
		}
		return len(lock.Waiting()) > 0
	})
	child.killedByParent.Store(true)
	child.kill()
	<-child.done
	endWaiting(t, s, lock)
	lock.Release()

	child = fleet.spawn()
	pgtest.Eventually(t, time.Minute, "the message in the DLQ", func() bool {
		if child.exited() {
			child = fleet.spawn()
		}
		return len(deadMessages(t, s, q)) == 1
	})
	fleet.stopAll()
	fleet.checkExits(t)
	d := deadMessages(t, s, q)[0]
	some, _ := hasErrorKeys(d.Block)
	if d.Block["reason"] != store.ReasonMaxRetriesExceeded || d.Block["attempts"] != float64(crashMaxRetries+1) || some {
		t.Errorf("dead-lettered with reason %v, attempts %v (want %d), error keys %v (want none): %v",
			d.Block["reason"], d.Block["attempts"], crashMaxRetries+1, some, d.Block)
	}
	for _, c := range fleet.all() {
		if c.ranKind("poison") {
			t.Errorf("child %d ran the poison message past max_retries", c.cmd.Process.Pid)
		}
	}
}
