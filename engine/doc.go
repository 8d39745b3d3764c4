// Package engine runs pgbus's workers: it reads messages from PGMQ queues,
// dispatches them to handlers by kind, and carries out each message's
// lifecycle: success archives, failures retry by moving the message's
// visibility timeout with backoff, and what cannot succeed goes to the
// queue's dead-letter queue with a block saying why.
//
// A Go program embeds it like this:
//
//	client, err := engine.NewClient(st, engine.Config{
//		Queues: []engine.QueueConfig{{Name: "emails", Concurrency: 10}},
//	})
//	client.Handle("welcome_email", func(ctx context.Context, job *engine.Job) error {
//		var in struct{ To string }
//		if err := job.Decode(&in); err != nil {
//			return err // already non-retryable: bad input goes to the DLQ at once
//		}
//		return send(ctx, in.To, job.IdempotencyKey)
//	})
//	err = client.Run(ctx) // until ctx ends, then drains
//
// A service whose own data lives in the same database sends a job in its
// own transaction with SendTx or SendBatchTx, so that the job commits with
// the write it belongs to, or not at all. One without such a transaction
// sends many messages at once with SendBatch, in a transaction of the
// client's own.
//
// This package holds no SQL: every statement on pgbus's and PGMQ's data
// is package store's.
package engine
