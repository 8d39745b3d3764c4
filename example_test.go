package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Example_goAPI is the README's Go section, compiled and run: a Go service
// starts the embedded PostgreSQL, creates a queue, handles and sends jobs,
// runs the workers until they are done, then inspects and retries a dead
// message through the operations layer, as the CLI and the MCP tools do.
func Example_goAPI() {
	// README:begin
	ctx := context.Background()
	check := func(err error) {
		if err != nil {
			panic(err) // unlike log.Fatal, it runs the deferred stops first
		}
	}
	errInvalidAddress := errors.New("invalid address") // no retry can fix it

	// The embedded PostgreSQL, from the server binaries on this machine, in
	// a fresh directory each run: a service keeps one directory of its own.
	// With a server of your own, pass its URL to store.Open instead.
	dir, err := os.MkdirTemp("", "pgbus-example-")
	check(err)
	defer os.RemoveAll(dir)
	pg, err := embedpg.Start(ctx, embedpg.Options{DataDir: dir})
	check(err)
	defer pg.Stop(ctx)
	st, err := store.Open(ctx, pg.URL())
	check(err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	check(err)

	// The operations layer: every operation of the CLI and the MCP tools.
	// The audit log records who called each one: name this program, else
	// its calls are recorded as made by "unknown".
	ctx = ops.WithClient(ctx, "example-service")
	bus, err := ops.New(st, ops.Options{AllowPayloads: true})
	check(err)
	// Close writes the audit entries the database could not take yet.
	defer bus.Close(ctx)
	_, err = bus.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "emails"}) // and emails_dlq
	check(err)

	client, err := engine.NewClient(st, engine.Config{
		Queues:       []engine.QueueConfig{{Name: "emails", Concurrency: 4}},
		PollInterval: 50 * time.Millisecond,
	})
	check(err)
	client.Handle("welcome_email", func(ctx context.Context, job *engine.Job) error {
		var in struct{ To string }
		if err := job.Decode(&in); err != nil {
			return err // bad input: dead-lettered at once
		}
		if in.To == "bob" {
			return engine.NonRetryable(fmt.Errorf("%w %q", errInvalidAddress, in.To))
		}
		return nil // sent, with job.IdempotencyKey passed downstream
	})
	for _, to := range []string{"ada@example.com", "bob"} {
		_, err := client.Send(ctx, "emails", map[string]string{"To": to},
			engine.SendOptions{Kind: "welcome_email", IdempotencyKey: "welcome:" + to})
		check(err)
	}

	// Run works until its context ends, then drains running jobs and
	// writes the last stats: wait for it to return.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()
	for {
		stats, err := bus.QueueStats(ctx, ops.QueueStatsRequest{Queue: "emails"})
		check(err)
		if q := stats.Queues[0]; q.Depth == 0 && q.DLQDepth == 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	check(<-done)

	// Why did a job die? Then retry it with a corrected payload.
	sum, err := bus.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: "emails"}})
	check(err)
	group := sum.Groups[0]
	fmt.Println(group.Kind, group.Reasons, group.Count)
	dead, err := bus.DLQShow(ctx, ops.DLQShowRequest{Queue: "emails", MsgID: group.SampleMsgIDs[0], IncludePayload: true})
	check(err)
	fmt.Println(dead.DeadLetter.ErrorMessage, string(dead.Payload))
	retry, err := bus.DLQRetry(ctx, ops.DLQRetryRequest{
		IDs:     []int64{dead.MsgID},
		Filter:  ops.DeadFilter{Queue: "emails"},
		Payload: json.RawMessage(`{"To": "bob@example.com"}`),
	})
	check(err)
	fmt.Println(retry.Outcomes[0].Outcome, "to", retry.Outcomes[0].Queue)
	// README:end

	// Output:
	// welcome_email [non_retryable_error] 1
	// invalid address "bob" {"To":"bob"}
	// retried to emails
}

// Example_sendInTransaction is the README's "Send in your own transaction":
// a service writes an order and sends its charge job in one transaction of
// its own pool, so that both commit or neither does.
func Example_sendInTransaction() {
	ctx := context.Background()
	check := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	dir, err := os.MkdirTemp("", "pgbus-example-")
	check(err)
	defer os.RemoveAll(dir)
	pg, err := embedpg.Start(ctx, embedpg.Options{DataDir: dir})
	check(err)
	defer pg.Stop(ctx)
	st, err := store.Open(ctx, pg.URL())
	check(err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	check(err)
	bus, err := ops.New(st, ops.Options{})
	check(err)
	_, err = bus.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "charges"})
	check(err)
	client, err := engine.NewClient(st, engine.Config{}) // sends only: no Run
	check(err)

	// The service's own pool and table, on the same database.
	pool, err := pgxpool.New(ctx, pg.URL())
	check(err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY, cents int)`)
	check(err)

	// README:tx:begin
	placeOrder := func(ctx context.Context, id, cents int) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) // after Commit it does nothing
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id, cents) VALUES ($1, $2)`, id, cents); err != nil {
			return err // no order, so no job either
		}
		_, err = client.SendTx(ctx, tx, "charges", map[string]int{"order": id, "cents": cents},
			engine.SendOptions{Kind: "charge", IdempotencyKey: fmt.Sprintf("charge:%d", id)})
		if err != nil {
			return err // no job, so no order either
		}
		return tx.Commit(ctx) // the job becomes visible, and workers wake, only now
	}
	// README:tx:end

	check(placeOrder(ctx, 1, 1250))
	err = placeOrder(ctx, 1, 990) // the same order again: its INSERT fails
	fmt.Println("second order refused:", err != nil)
	var orders int
	check(pool.QueryRow(ctx, `SELECT count(*) FROM orders`).Scan(&orders))
	stats, err := bus.QueueStats(ctx, ops.QueueStatsRequest{Queue: "charges"})
	check(err)
	fmt.Println("orders:", orders, "charge jobs:", stats.Queues[0].Depth)

	// Output:
	// second order refused: true
	// orders: 1 charge jobs: 1
}

// Example_sendBatch is the README's "Send many at once": a program
// enqueues a batch of jobs in one transaction of the client's own, each
// with its own options, all or none.
func Example_sendBatch() {
	ctx := context.Background()
	check := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	dir, err := os.MkdirTemp("", "pgbus-example-")
	check(err)
	defer os.RemoveAll(dir)
	pg, err := embedpg.Start(ctx, embedpg.Options{DataDir: dir})
	check(err)
	defer pg.Stop(ctx)
	st, err := store.Open(ctx, pg.URL())
	check(err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	check(err)
	bus, err := ops.New(st, ops.Options{})
	check(err)
	_, err = bus.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "invoices"})
	check(err)
	client, err := engine.NewClient(st, engine.Config{}) // sends only: no Run
	check(err)

	// README:batch:begin
	var batch []engine.BatchMessage
	for _, customer := range []int{17, 42, 17} {
		batch = append(batch, engine.BatchMessage{
			Payload: map[string]int{"customer": customer},
			Options: engine.SendOptions{Kind: "invoice", IdempotencyKey: fmt.Sprintf("invoice:%d", customer)},
		})
	}
	ids, err := client.SendBatch(ctx, "invoices", batch) // one transaction: all or none
	check(err)
	// README:batch:end

	fmt.Println("third is the first:", ids[2] == ids[0], "second is new:", ids[1] != ids[0])
	stats, err := bus.QueueStats(ctx, ops.QueueStatsRequest{Queue: "invoices"})
	check(err)
	fmt.Println("invoice jobs:", stats.Queues[0].Depth)

	// Output:
	// third is the first: true second is new: true
	// invoice jobs: 2
}
